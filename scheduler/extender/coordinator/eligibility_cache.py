"""Which nodes a pod may run on, kept while the Nodes do not change: judging every node costs about as much as
the rest of a small gang's plan, and gangs of one workload share their pods' placement rules.

An answer is kept per ``ClusterStore.node_version`` × the pod's placement signature (``nodeSelector``, affinity,
tolerations: everything eligibility reads of a pod). The node version moves on any Node added, deleted, or changed
in what eligibility reads of it (labels, taints, ``unschedulable``; allocatable too) and not on a heartbeat; when
it moves, every answer is dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from api.core import Node, Pod
from scheduler.extender.state.store import ClusterStore
from scheduler.extender.translation.eligibility import eligible_nodes
from scheduler.extender.translation.gang_request import Eligibility

__all__ = ["EligibilityCache"]

_LIMIT = 4096  # distinct placement signatures kept at once; beyond it the answers start over


class EligibilityCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version = -1
        self._answers: dict[str, frozenset[str] | None] = {}
        self.judged = 0  # answers computed over every node (the rest came from the cache): for tests and counts

    def nodes(self, store: ClusterStore) -> tuple[list[Node], Eligibility]:
        """The store's Nodes and eligibility judged on exactly them, answers kept across calls while the Nodes'
        version holds."""
        version, nodes = store.versioned_nodes()
        with self._lock:
            if version > self._version:  # a caller holding older Nodes neither drops nor reads newer answers
                self._version, self._answers = version, {}
        return nodes, lambda pod, signature: self._answer(version, nodes, pod, signature)

    def _answer(self, version: int, nodes: Sequence[Node], pod: Pod, signature: str) -> frozenset[str] | None:
        with self._lock:
            if version == self._version and signature in self._answers:
                return self._answers[signature]
        passing = eligible_nodes(pod, nodes)
        with self._lock:
            self.judged += 1
            if version == self._version:  # an answer on older Nodes is used once, never kept
                if len(self._answers) >= _LIMIT:
                    self._answers = {}
                self._answers[signature] = passing
        return passing
