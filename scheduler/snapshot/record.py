"""Recording a live cluster as a snapshot: list every recorded kind in pages, scrub each object, and leave out pods
bound to nodes deleted while listing, so the snapshot is consistent. ``grove-extender record`` writes the result.

Lists Nodes, unfinished Pods, PodGangs, PriorityClasses (what a PodGang's priority means) and, when installed,
PodCliqueSets and ClusterTopologyBindings (a kind that is not installed or not readable is skipped and said so).
Never reads Secrets.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from rich.progress import Progress, TaskID
from urllib3.exceptions import HTTPError

from scheduler.kube.connect import describe_error
from scheduler.kube.listing import (
    CLUSTER_TOPOLOGY_BINDINGS,
    NODES,
    PODCLIQUESETS,
    PODGANGS,
    PODS,
    PRIORITY_CLASSES,
    ListExpiredError,
    list_all,
)
from scheduler.snapshot.scrub import scrub

__all__ = ["OPTIONAL", "REQUIRED", "RecordError", "Recording", "record"]

# Nodes and Pods are the snapshot; the Grove kinds are recorded when their CRDs are installed.
REQUIRED = (NODES, PODS)
OPTIONAL = (PODGANGS, PRIORITY_CLASSES, PODCLIQUESETS, CLUSTER_TOPOLOGY_BINDINGS)


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
