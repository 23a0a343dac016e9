"""``grove-extender snapshot inspect FILE [--json]``: what a snapshot holds, at a glance."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from api.grove import LABEL_PODGANG
from scheduler.snapshot import Snapshot, SnapshotError, load_snapshot

GPU = "nvidia.com/gpu"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("snapshot", help="work with cluster snapshots")
    verbs = parser.add_subparsers(dest="snapshot_command", required=True)
    inspect = verbs.add_parser("inspect", help="summarise a snapshot: nodes, GPUs, bound pods, pending gangs")
    inspect.add_argument("file", help="a Kubernetes List (JSON or YAML, optionally gzip)")
    inspect.add_argument("--json", action="store_true", help="print the summary as JSON")
    inspect.set_defaults(handler=run_inspect)


def summarise(snapshot: Snapshot) -> dict[str, Any]:
    bound = [pod for pod in snapshot.pods if pod.spec.nodeName and not pod.terminal]
    pending: dict[str, list[int]] = {}
    for pod in snapshot.pods:
        gang = pod.metadata.labels.get(LABEL_PODGANG)
        if gang and not pod.spec.nodeName and not pod.terminal:
            pending.setdefault(f"{pod.metadata.namespace}/{gang}", []).append(pod.requests().get(GPU, 0))
    return {
        "nodes": len(snapshot.nodes),
        "gpus_total": sum(node.allocatable().get(GPU, 0) for node in snapshot.nodes),
        "bound_pods": len(bound),
        "pending_gangs": [{"gang": key, "pods": len(gpus), "gpus": sum(gpus)} for key, gpus in sorted(pending.items())],
    }


def run_inspect(args: argparse.Namespace) -> int:
    try:
        snapshot = load_snapshot(args.file)
    except SnapshotError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    summary = summarise(snapshot)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    console = Console()
    console.print(f"{summary['nodes']} nodes, {summary['gpus_total']} GPUs, {summary['bound_pods']} bound pods")
    table = Table(title="pending gangs")
    for column in ("gang", "pods", "GPUs"):
        table.add_column(column)
    for gang in summary["pending_gangs"]:
        table.add_row(gang["gang"], str(gang["pods"]), str(gang["gpus"]))
    console.print(table)
    return 0
