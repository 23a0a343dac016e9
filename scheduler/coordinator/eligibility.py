"""Which nodes a pod may use at all, by the pod's own predicates: node not cordoned, its nodeSelector matched.

kube-scheduler checks the rest (taints, affinity) before it asks us, and a planned node it rejects is excluded and
the gang re-planned, so this only has to keep plans off nodes that can never work.
"""

from __future__ import annotations

from collections.abc import Iterable

from api.kube import Node, Pod

__all__ = ["eligible_nodes"]


def eligible_nodes(pod: Pod, nodes: Iterable[Node]) -> set[str]:
    selector = pod.spec.nodeSelector
    return {
        node.name
        for node in nodes
        if not node.spec.unschedulable
        and all(node.metadata.labels.get(key) == value for key, value in selector.items())
    }
