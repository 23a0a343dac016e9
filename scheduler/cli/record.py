"""``grove-extender record [--kubeconfig FILE] -o SNAPSHOT``: a snapshot of a live cluster.

Records the cluster (``scheduler.snapshot.record``: Nodes, unfinished Pods, PodGangs and, when installed,
PodCliqueSets and ClusterTopologyBindings, scrubbed); writes a ``List`` (``.gz`` compresses, ``.yaml`` writes YAML);
then loads the file back, so a snapshot that would not replay is reported now rather than at bench time.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from scheduler.kube.connect import ConnectError, load_api_client
from scheduler.snapshot import SnapshotError, dump_snapshot, load_snapshot
from scheduler.snapshot.record import RecordError, Recording, record

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "record",
        help="write a snapshot of a live cluster (nodes, pods, Grove objects), without secrets",
        description="Write a snapshot of a live cluster. Never reads Secrets; keeps only the fields scheduling "
        "reads (resources, selectors, affinity, tolerations, labels...) and drops the rest: env values, commands, "
        "probes, volume options, annotations, managedFields.",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster service account)")
    parser.add_argument(
        "-o", "--output", required=True, help="snapshot file; .gz compresses, .yaml writes YAML, else JSON"
    )
    parser.set_defaults(handler=run_record)


def _summary(recording: Recording, path: Path) -> Table:
    table = Table(title=f"snapshot {path} ({path.stat().st_size / 1024:.0f} KiB)")
    table.add_column("kind")
    table.add_column("objects", justify="right")
    for kind, count in recording.counts.items():
        table.add_row(kind, str(count))
    for plural, why in recording.skipped.items():
        table.add_row(plural, f"skipped: {why}")
    return table


def run_record(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    try:
        api_client = load_api_client(args.kubeconfig)
    except ConnectError as err:
        console.print(f"error: {err}", markup=False, soft_wrap=True)
        return 2
    path = Path(args.output)
    try:
        with Progress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console, transient=True
        ) as progress:
            recording = record(api_client, progress=progress)
        dump_snapshot(recording.items, path)
        load_snapshot(path)  # what we wrote must load, or the user learns it only when replaying
    except RecordError as err:
        console.print(f"error: {err}", markup=False, soft_wrap=True)
        return 1
    except SnapshotError as err:
        console.print(f"error: the recorded snapshot does not load back: {err}", markup=False, soft_wrap=True)
        return 1
    except OSError as err:
        console.print(f"error: cannot write {path}: {err.strerror}", markup=False, soft_wrap=True)
        return 1
    finally:
        api_client.close()  # type: ignore[no-untyped-call]
    if recording.dropped_pods:
        console.print(f"note: {recording.dropped_pods} pods were bound to nodes deleted while recording; left out")
    console.print(_summary(recording, path))
    return 0
