"""The topology graph, rebuilt only when Nodes change: building it reads every node, and pods change far more often
than nodes (``benchmarks/bench_snapshot_load.py`` times a build; figures in docs/README.md)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from scheduler.extender.state.store import ClusterStore
from scheduler.extender.translation.cluster_view import build_topology
from topology import Level, Topology

__all__ = ["TopologyCache"]


class TopologyCache:
    def __init__(self, levels: Sequence[Level] | None = None) -> None:
        self._levels = levels
        self._lock = threading.Lock()
        self._built: tuple[int, Topology] | None = None

    def get(self, store: ClusterStore) -> Topology:
        version = store.node_version
        with self._lock:
            if self._built is not None and self._built[0] == version:
                return self._built[1]
            topology = build_topology(store.nodes(), levels=self._levels)
            self._built = (version, topology)
            return topology
