"""Cluster state: a thread-safe in-memory mirror of Nodes, Pods and PodGangs, fed by live watches (``scheduler.kube``)
or by a snapshot file (``scheduler.state.snapshot_source``).

Owns: the store, its indexes (our pods by UID, by gang, capacity used per node), which pods it keeps whole (ours)
and what it keeps of the others (``ForeignPod``: capacity), and change notification. Does not own: plans,
reservations or any decision; those live in ``scheduler.coordinator`` and only read the store.
"""

from scheduler.state.foreign import DEFAULT_SCHEDULER_NAMES, ForeignPod, OurPods
from scheduler.state.snapshot_source import load_snapshot_into
from scheduler.state.store import ClusterStore, EventType, Kind, StoreListener

__all__ = [
    "DEFAULT_SCHEDULER_NAMES",
    "ClusterStore",
    "EventType",
    "ForeignPod",
    "Kind",
    "OurPods",
    "StoreListener",
    "load_snapshot_into",
]
