"""``grove-extender plan --snapshot FILE [--policy cpsat] [--json]``: plan a snapshot's pending PodGangs.

Gangs are planned highest priority first (``translation.priority``: the PodGang's PriorityClass, else its pods'
priority, else the default class), then in arrival order (``metadata.creationTimestamp``, then name), each on the
capacity the earlier ones left: a placed gang's pods are reserved before the next is solved, as the extender's
coordinator reserves them. The request is the one translator's (``scheduler.extender.translation.gang_request``):
members already bound are facts, not plans (they hold capacity already, count towards their group's ``minReplicas``
and hold a required domain). A gang that cannot be turned into a request (a missing or gated guaranteed pod, a group
config naming an unknown group) is reported ``Invalid`` with the reason, and the rest are still planned.

A gang that does not fit and whose priority may preempt gets the preemption the extender would make (unless
``--no-preemption``): the snapshot's running pods of lower priority are gathered as the extender gathers them
(``coordinator.victims.gather``: every running member of a lower gang or none of it, other schedulers' pods whole),
the victim model (``placement.preemption.plan_preemption``) picks the cheapest that lets the whole gang in, and the
gang is placed on what they free. The victims it chose are gone for the gangs planned after it. Gangs planned earlier
in the same run are never victims: they were planned first because their priority is at least this gang's. Gangs
evicted whole are not planned again here (their controller re-creates their pods), and a gang with members bound
already gets no preemption (the extender repairs it around them). With a baseline ``--policy`` no
preemption is planned: the victim model checks fits with a policy that keeps gangs whole and their required packs
(``cpsat``, ``topology-greedy``).

JSON shape: ``{"gangs": [{"namespace", "name", "priority", "status", "placement": {"ns/pod": "node"},
"placementScore", "reason", "solveSeconds", "preemption"}]}``; ``preemption`` is ``null`` or ``{"status",
"evicted": [pods], "gangs": [victim gangs], "gpus", "pods", "highestPriority", "reason", "solveSeconds"}``. Bad input
(snapshot, levels file) prints one line to stderr and exits 2.
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
from placement.preemption import Preemption, plan_preemption
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangRef
from scheduler.extender.coordinator.victims import Candidates, gather
from scheduler.extender.state import ClusterStore, load_snapshot_into
from scheduler.extender.translation.cluster_view import LevelsError, snapshot_view
from scheduler.extender.translation.gang_request import GangRequestError, gang_request
from scheduler.extender.translation.priority import GangPriority, gang_priority
from scheduler.snapshot import Snapshot, SnapshotError, load_snapshot

__all__ = ["plan_snapshot", "register", "run_plan"]

log = logging.getLogger(__name__)
_NEVER = datetime.max.replace(tzinfo=UTC)  # a gang without a timestamp arrives last
_PREEMPTING = ("cpsat", "topology-greedy")  # policies the victim model checks fits with


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="plan a snapshot's pending PodGangs by priority then arrival, each reserving capacity for the next",
    )
    parser.add_argument("--snapshot", required=True, metavar="FILE", help="a Kubernetes List (JSON/YAML, gzip ok)")
    parser.add_argument("--policy", default="cpsat", choices=list(POLICIES), help="placement policy (default cpsat)")
    parser.add_argument("--json", action="store_true", help="print the plans as JSON")
    parser.add_argument("--levels", metavar="FILE", help="topology levels (YAML/JSON list of {domain, key})")
    parser.add_argument(
        "--time-limit", type=float, default=SolveOptions().time_limit_seconds, help="seconds per gang (cpsat)"
    )
    parser.add_argument(
        "--preemption",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="for a gang that does not fit, show the lower-priority pods the extender would evict to place it "
        "(as serve --preemption does; policies cpsat and topology-greedy) (default: %(default)s)",
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
    gangs = plan_snapshot(snapshot, view, options, preemption=args.preemption)
    if args.json:
        print(json.dumps({"gangs": gangs}, indent=2))
    else:
        _render(gangs, Console())
    return 0


def plan_snapshot(
    snapshot: Snapshot, view: ClusterView, options: SolveOptions, *, preemption: bool = True
) -> list[dict[str, Any]]:
    """One entry per pending PodGang, highest priority first, then in arrival order, each planned on what the
    earlier ones left free (and, with ``preemption``, what the victims chosen for them freed)."""
    pods = {pod.key: pod for pod in snapshot.pods}
    pending = [(gang, gang_priority(gang, _members(gang, pods), snapshot)) for gang in _pending(snapshot, pods)]
    pending.sort(key=lambda item: (-item[1].value, item[0].metadata.creationTimestamp or _NEVER, item[0].key))
    victims = _Victims(snapshot) if preemption and options.policy in _PREEMPTING else None
    entries: list[dict[str, Any]] = []
    for gang, priority in pending:
        made: dict[str, Any] | None = None
        try:
            request = gang_request(gang, pods, snapshot.nodes, classes=snapshot)
        except GangRequestError as err:
            result = Result(status=Status.INVALID, reason=str(err))
        else:
            result = solve(request, view, options)
            if (
                result.status is not Status.PLACED
                and victims is not None
                and priority.preempts
                and not _under_way(gang, pods)
            ):
                result, view, made = victims.make_room(request, priority, view, options, refused=result)
            view = _reserve(view, request, result)
        log.info("planned gang=%s status=%s seconds=%.3f", gang.key, result.status.value, result.solve_seconds)
        entries.append(
            {
                "namespace": gang.metadata.namespace,
                "name": gang.metadata.name,
                "priority": priority.value,
                "status": result.status.value,
                "placement": dict(sorted(result.assignment.items())),
                "placementScore": result.placement_score,
                "reason": result.reason,
                "solveSeconds": round(result.solve_seconds, 6),
                "preemption": made,
            }
        )
    return entries


def _members(gang: PodGang, pods: Mapping[str, Pod]) -> list[Pod]:
    return [pods[key] for key in gang.member_keys() if key in pods]


def _under_way(gang: PodGang, pods: Mapping[str, Pod]) -> bool:
    """Members bound already: the extender repairs such a gang around them, it does not make room for it."""
    return any(pod.spec.nodeName and not pod.terminal for pod in _members(gang, pods))


class _Victims:
    """The snapshot's running pods as the extender sees them (a ``ClusterStore``), less those already evicted for
    a gang planned earlier in this run."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._store = ClusterStore()
        load_snapshot_into(self._store, snapshot)

    def make_room(
        self,
        request: GangRequest,
        priority: GangPriority,
        view: ClusterView,
        options: SolveOptions,
        *,
        refused: Result,
    ) -> tuple[Result, ClusterView, dict[str, Any]]:
        """The preemption for a gang ``refused`` on ``view``: the result to report, the view once the victims are
        gone, and the entry's ``preemption``."""
        found = gather(
            store=self._store,
            table=GangTable(),  # no reservations: plan reserves on its view, and earlier gangs are never victims
            preemptor=GangRef(request.namespace, request.name),
            priority=priority.value,
            evict=True,
            useful=_useful(request),
        )
        free = _with(view.free, found.coming_free)
        chosen = plan_preemption(
            request, ClusterView(view.topology, free), found.victims, found.gangs, options, budgets=found.budgets
        )
        made = _described(chosen, found)
        if chosen.status is not Status.PLACED:
            return refused, view, made
        gone = set(chosen.evicted)
        for victim in found.victims:
            if victim.key in gone:
                free = _with(free, {victim.node: victim.demand})
                if (pod := self._store.pod(victim.key)) is not None:
                    self._store.apply("Pod", "DELETED", pod)
        freed = ClusterView(view.topology, free)
        # As the extender does: the victims' choice comes with a placement the freed room allows; the gang is
        # placed again on that room, best-effort pods included, and the choice's placement kept if that fails.
        placed = solve(request, freed, options)
        if placed.status is not Status.PLACED:
            placed = Result(Status.PLACED, dict(chosen.assignment), solve_seconds=chosen.solve_seconds)
        return placed, freed, made


def _useful(request: GangRequest) -> frozenset[str] | None:
    """The nodes the gang could run on at all (``None``: any): victims elsewhere could not help it."""
    sets = [group.eligible for group in request.groups]
    if any(eligible is None for eligible in sets):
        return None
    return frozenset().union(*(eligible for eligible in sets if eligible is not None))


def _with(free: Mapping[str, Mapping[str, int]], extra: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    out = {node: dict(units) for node, units in free.items()}
    for node, units in extra.items():
        if node in out:
            for resource, amount in units.items():
                out[node][resource] = out[node].get(resource, 0) + amount
    return out


def _described(chosen: Preemption, found: Candidates) -> dict[str, Any]:
    gone = set(chosen.evicted)
    cost = chosen.cost
    return {
        "status": chosen.status.value,
        "evicted": sorted(gone),
        "gangs": sorted({victim.gang for victim in found.victims if victim.key in gone}),
        "gpus": cost.victim_gpus,
        "pods": cost.victim_pods,
        "highestPriority": cost.victim_priority,
        "reason": chosen.reason,
        "solveSeconds": round(chosen.solve_seconds, 6),
    }


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
        made = entry.get("preemption")
        if made and made["status"] == Status.PLACED.value:
            console.print(
                f"  preempts: evicts {made['pods']} pod(s) of {len(made['gangs'])} gang(s) ({made['gpus']} GPUs, "
                f"highest priority {made['highestPriority']}): {', '.join(made['gangs'])}",
                markup=False,
                soft_wrap=True,
            )
            for pod in made["evicted"]:
                console.print(f"  evicts {pod}", markup=False)
        elif made:
            console.print(f"  preemption: {made['status']}: {made['reason']}", markup=False, soft_wrap=True)
        for pod, node in entry["placement"].items():
            console.print(f"  {pod} → {node}", markup=False)
    placed = sum(1 for e in gangs if e["status"] == Status.PLACED.value)
    preempting = sum(1 for e in gangs if (e.get("preemption") or {}).get("evicted"))
    console.print(f"{placed} of {len(gangs)} pending gangs placed, {preempting} by preempting")
