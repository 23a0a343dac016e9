"""``grove-extender plan --snapshot FILE [--policy cpsat] [--json]``: plan a snapshot's pending PodGangs.

Gangs are planned in arrival order (``metadata.creationTimestamp``, then name), each on the capacity the earlier ones
left: a placed gang's pods are reserved before the next is solved, as the extender's coordinator reserves them. The
request is the one translator's (``scheduler.extender.translation.gang_request``): members already bound are facts, not
plans (they hold capacity already, count towards their group's ``minReplicas`` and hold a required domain). A gang that
cannot be turned into a request (a missing or gated guaranteed pod, a group config naming an unknown group) is reported
``Invalid`` with the reason, and the rest are still planned.

JSON shape: ``{"gangs": [{"namespace", "name", "status", "placement": {"ns/pod": "node"}, "placementScore",
"reason", "solveSeconds"}]}``. Bad input (snapshot, levels file) prints one line to stderr and exits 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from rich.console import Console

from api.core import Pod
from api.grove import PodGang
from placement import POLICIES, ClusterView, GangRequest, Result, SolveOptions, Status, solve
from scheduler.extender.translation.cluster_view import LevelsError, snapshot_view
from scheduler.extender.translation.gang_request import GangRequestError, gang_request
from scheduler.snapshot import Snapshot, SnapshotError, load_snapshot

__all__ = ["plan_snapshot", "register", "run_plan"]

log = logging.getLogger(__name__)
_NEVER = datetime.max.replace(tzinfo=UTC)  # a gang without a timestamp arrives last


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "plan", help="plan a snapshot's pending PodGangs in arrival order, each reserving capacity for the next"
    )
    parser.add_argument("--snapshot", required=True, metavar="FILE", help="a Kubernetes List (JSON/YAML, gzip ok)")
    parser.add_argument("--policy", default="cpsat", choices=list(POLICIES), help="placement policy (default cpsat)")
    parser.add_argument("--json", action="store_true", help="print the plans as JSON")
    parser.add_argument("--levels", metavar="FILE", help="topology levels (YAML/JSON list of {domain, key})")
    parser.add_argument(
        "--time-limit", type=float, default=SolveOptions().time_limit_seconds, help="seconds per gang (cpsat)"
    )
    parser.set_defaults(handler=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    try:
        snapshot = load_snapshot(args.snapshot)
        view = snapshot_view(snapshot, levels_file=args.levels)
    except (SnapshotError, LevelsError) as err:
        print("error: " + " ".join(str(err).split()), file=sys.stderr)
        return 2
    options = SolveOptions(policy=args.policy, time_limit_seconds=args.time_limit)
    gangs = plan_snapshot(snapshot, view, options)
    if args.json:
        print(json.dumps({"gangs": gangs}, indent=2))
    else:
        _render(gangs, Console())
    return 0


def plan_snapshot(snapshot: Snapshot, view: ClusterView, options: SolveOptions) -> list[dict[str, Any]]:
    """One entry per pending PodGang, in arrival order, each planned on what the earlier ones left free."""
    pods = {pod.key: pod for pod in snapshot.pods}
    entries: list[dict[str, Any]] = []
    for gang in sorted(_pending(snapshot, pods), key=lambda g: (g.metadata.creationTimestamp or _NEVER, g.key)):
        try:
            request = gang_request(gang, pods, snapshot.nodes, classes=snapshot)
        except GangRequestError as err:
            result = Result(status=Status.INVALID, reason=str(err))
        else:
            result = solve(request, view, options)
            view = _reserve(view, request, result)
        log.info("planned gang=%s status=%s seconds=%.3f", gang.key, result.status.value, result.solve_seconds)
        entries.append(
            {
                "namespace": gang.metadata.namespace,
                "name": gang.metadata.name,
                "status": result.status.value,
                "placement": dict(sorted(result.assignment.items())),
                "placementScore": result.placement_score,
                "reason": result.reason,
                "solveSeconds": round(result.solve_seconds, 6),
            }
        )
    return entries


def _pending(snapshot: Snapshot, pods: Mapping[str, Pod]) -> list[PodGang]:
    """Gangs with a member that still waits for a node (or is referenced but not created yet)."""
    found = []
    for gang in snapshot.podgangs:
        refs = gang.member_keys()
        if any(ref not in pods or (not pods[ref].spec.nodeName and not pods[ref].terminal) for ref in refs):
            found.append(gang)
    return found


def _reserve(view: ClusterView, request: GangRequest, result: Result) -> ClusterView:
    """The view with ``result``'s pods taking their share (partial plans too: those pods would be bound)."""
    if not result.assignment:
        return view
    demand = {pod: group.demand for group in request.groups for pod in group.pods}
    free = {node: dict(units) for node, units in view.free.items()}
    for pod, node in result.assignment.items():
        for resource, units in demand[pod].items():
            free[node][resource] = free[node].get(resource, 0) - units
    return ClusterView(view.topology, free)


def _render(gangs: Sequence[dict[str, Any]], console: Console) -> None:
    if not gangs:
        console.print("no pending PodGangs in the snapshot")
        return
    for entry in gangs:
        score = entry["placementScore"]
        shown = "-" if score is None else f"{score:.3f}"
        console.print(
            f"[bold]{entry['namespace']}/{entry['name']}[/]  {entry['status']}  placementScore {shown}  "
            f"{entry['solveSeconds'] * 1000:.1f} ms"
        )
        if entry["reason"]:
            console.print(f"  reason: {entry['reason']}", markup=False)
        for pod, node in entry["placement"].items():
            console.print(f"  {pod} → {node}", markup=False)
    placed = sum(1 for e in gangs if e["status"] == Status.PLACED.value)
    console.print(f"{placed} of {len(gangs)} pending gangs placed")
