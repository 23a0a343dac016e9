"""Feed a snapshot into a ``ClusterStore``: the embedded mode's stand-in for list + watch."""

from __future__ import annotations

from scheduler.extender.state.store import ClusterStore
from scheduler.snapshot import Snapshot

__all__ = ["load_snapshot_into"]


def load_snapshot_into(store: ClusterStore, snapshot: Snapshot) -> None:
    """Replace the store's Nodes, Pods, PodGangs and PriorityClasses with the snapshot's and mark it synced, as a
    first list would."""
    store.replace("PriorityClass", snapshot.priority_classes)
    store.replace("Node", snapshot.nodes)
    store.replace("Pod", snapshot.pods)
    store.replace("PodGang", snapshot.podgangs)
    store.mark_synced()
