"""``grove-extender snapshot inspect FILE [--json] [--levels FILE]``: what a snapshot holds, at a glance.

Errors in the input (a bad snapshot or levels file) print one line to stderr and exit 2, never a traceback:
users point this at hand-edited dumps first.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console, JustifyMethod
from rich.table import Table

from scheduler.cli.snapshot_summary import summarise
from scheduler.extender.translation.cluster_view import LevelsError
from scheduler.snapshot import SnapshotError, load_snapshot

__all__ = ["register", "run_inspect"]

_RIGHT: JustifyMethod = "right"
MAX_DOMAIN_ROWS = 24  # per level in the human view; --json lists every domain


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("snapshot", help="work with cluster snapshots")
    verbs = parser.add_subparsers(dest="snapshot_command", required=True)
    inspect = verbs.add_parser(
        "inspect", help="summarise a snapshot: nodes, GPUs, free GPUs per topology domain, bound pods, pending gangs"
    )
    inspect.add_argument("file", help="a Kubernetes List (JSON or YAML, optionally gzip)")
    inspect.add_argument("--json", action="store_true", help="print the summary as JSON (shape: version 2)")
    inspect.add_argument(
        "--levels",
        metavar="FILE",
        help="topology levels (YAML/JSON list of {domain, key}); overrides a ClusterTopologyBinding and defaults",
    )
    inspect.set_defaults(handler=run_inspect)


def run_inspect(args: argparse.Namespace) -> int:
    try:
        summary = summarise(load_snapshot(args.file), levels_file=args.levels)
    except (SnapshotError, LevelsError) as err:
        # One line even when the parser's own message spans several (YAML's do).
        print("error: " + " ".join(str(err).split()), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _render(summary, Console())
    return 0


def _render(summary: dict[str, Any], console: Console) -> None:
    gpus = summary["gpus"]
    console.print(
        f"[bold]{summary['nodes']}[/] nodes ({summary['unschedulable_nodes']} unschedulable), "
        f"[bold]{gpus['total']}[/] GPUs, [bold]{gpus['free']}[/] free, "
        f"[bold]{summary['bound_pods']}[/] bound pods"
    )
    console.print("levels: " + " → ".join(level["name"] for level in summary["levels"]))
    # A level with one domain (one region, one spine…) says nothing per domain: one line for all of those.
    single = [(level, rows[0]) for level, rows in summary["domains"].items() if len(rows) == 1]
    if single:
        console.print("one domain: " + ", ".join(f"{level} {row['domain']}" for level, row in single))
    for level, domains in summary["domains"].items():
        if len(domains) == 1:
            continue
        table = Table(title=f"free GPUs per {level} domain", title_justify="left")
        table.add_column("domain")
        for column in ("nodes", "GPUs", "free"):
            table.add_column(column, justify=_RIGHT)
        for row in domains[:MAX_DOMAIN_ROWS]:
            table.add_row(row["domain"], str(row["nodes"]), str(row["gpus_total"]), str(row["gpus_free"]))
        if len(domains) > MAX_DOMAIN_ROWS:
            table.add_row(f"… {len(domains) - MAX_DOMAIN_ROWS} more (see --json)", "", "", "")
        console.print(table)
    gangs = Table(title="pending gangs", title_justify="left")
    for column in ("gang", "groups", "pods (min)", "gated", "GPUs (min)", "note"):
        gangs.add_column(column)
    for gang in summary["pending_gangs"]:
        gangs.add_row(
            gang["gang"],
            str(gang["groups"]),
            f"{gang['pods']} ({gang['min_pods']})",
            str(gang["gated_pods"]),
            "?" if gang["gpus"] is None else f"{gang['gpus']} ({gang['min_gpus']})",
            gang["error"] or "",
        )
    console.print(gangs)
    if summary["pending_pods_without_gang"]:
        console.print(f"{summary['pending_pods_without_gang']} pending pods belong to no gang")
