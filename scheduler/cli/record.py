"""``grove-extender record [--kubeconfig FILE] -o SNAPSHOT``: a snapshot of a live cluster.

Lists Nodes, unfinished Pods, PodGangs and, when installed, PodCliqueSets and ClusterTopologyBindings; scrubs
them (``scheduler.kube.scrub``); writes a ``List`` (``.gz`` compresses, ``.yaml`` writes YAML); then loads the
file back, so a snapshot that would not replay is reported now rather than at bench time.
"""

from __future__ import annotations

import argparse
import functools
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from urllib3.exceptions import HTTPError

from scheduler.kube.connect import ConnectError, describe_error, load_api_client
from scheduler.kube.listing import (
    CLUSTER_TOPOLOGY_BINDINGS,
    NODES,
    PODCLIQUESETS,
    PODGANGS,
    PODS,
    ListExpiredError,
    list_all,
)
from scheduler.kube.scrub import scrub
from scheduler.snapshot import SnapshotError, dump_snapshot, load_snapshot

__all__ = ["record", "register"]

log = logging.getLogger(__name__)

# Nodes and Pods are the snapshot; the Grove kinds are recorded when their CRDs are installed.
REQUIRED = (NODES, PODS)
OPTIONAL = (PODGANGS, PODCLIQUESETS, CLUSTER_TOPOLOGY_BINDINGS)


class RecordError(RuntimeError):
    """The cluster could not be recorded; the message says which resource and why."""


@dataclass
class Recording:
    items: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # resource → why it is not in the snapshot
    dropped_pods: int = 0  # bound to a node that vanished between the node and pod lists


def record(api_client: ApiClient, *, progress: Progress) -> Recording:
    """List, scrub and collect every recorded resource (``Progress(disable=True)`` shows nothing)."""
    recording = Recording()
    for resource in (*REQUIRED, *OPTIONAL):
        task = progress.add_task(resource.plural, total=None)
        on_page = functools.partial(_show_count, progress, task, resource.plural)
        try:
            raw, _ = list_all(api_client, resource, on_page=on_page)
        except (ApiException, HTTPError, OSError, ListExpiredError) as err:
            if resource in OPTIONAL and isinstance(err, ApiException) and err.status in (403, 404):
                why = "not installed" if err.status == 404 else "not readable with these credentials"
                recording.skipped[resource.plural] = f"{why} (HTTP {err.status})"
                progress.update(task, description=f"{resource.plural}: skipped, {why}", total=1, completed=1)
                continue
            raise RecordError(f"listing {resource.plural} failed: {describe_error(err)}") from None
        recording.items.extend(scrub(item) for item in raw)
        recording.counts[resource.kind] = len(raw)
        progress.update(task, total=len(raw), completed=len(raw))
    _drop_orphans(recording)
    return recording


def _show_count(progress: Progress, task: TaskID, plural: str, count: int) -> None:
    progress.update(task, description=f"{plural}: {count}")


def _drop_orphans(recording: Recording) -> None:
    """Nodes and pods are listed one after the other; a pod bound to a node deleted in between would make the
    snapshot inconsistent (and refused on load), so it goes, counted."""
    nodes = {item["metadata"]["name"] for item in recording.items if item.get("kind") == "Node"}
    kept = []
    for item in recording.items:
        node = (item.get("spec") or {}).get("nodeName") if item.get("kind") == "Pod" else None
        if node and node not in nodes:
            recording.dropped_pods += 1
            continue
        kept.append(item)
    recording.items = kept
    recording.counts["Pod"] = recording.counts.get("Pod", 0) - recording.dropped_pods


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
