"""Cluster state: a thread-safe in-memory mirror of Nodes, Pods and PodGangs, fed by live watches (``scheduler.kube``)
or by a snapshot file (``scheduler.extender.state.snapshot_source``).

Owns: the store, its indexes (our pods by UID, by gang, capacity used per node), and change notification. Which
pods it keeps whole (ours) and what it keeps of the others (``ForeignPod``: capacity) is the rule of
``scheduler.kube.foreign``, by which the watch decodes each pod. Does not own: plans, reservations or any decision;
those live in ``scheduler.extender.coordinator`` and only read the store.
"""

from scheduler.extender.state.snapshot_source import load_snapshot_into
from scheduler.extender.state.store import ClusterStore, EventType, Kind, StoreListener

__all__ = [
    "ClusterStore",
    "EventType",
    "Kind",
    "StoreListener",
    "load_snapshot_into",
]
