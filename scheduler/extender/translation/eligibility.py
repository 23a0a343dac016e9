"""Whether a pod may run on a node at all, judged as kube-scheduler's own filter plugins judge it.

Covers NodeUnschedulable, TaintToleration (NoSchedule and NoExecute), and NodeAffinity (``nodeSelector`` plus
required node affinity, every operator, ``matchFields`` on ``metadata.name``). Capacity is not judged here: it
depends on other pods and reservations, which the solver weighs. The reasons are kube-scheduler's wording, so a
``FailedNodes`` entry reads like the message users already know.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from api.core import Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration

__all__ = [
    "REASON_AFFINITY",
    "REASON_UNSCHEDULABLE",
    "eligible_nodes",
    "matches_node_affinity",
    "node_rejection",
    "rejections",
    "tolerates",
    "untolerated_taint",
]

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
_HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})  # PreferNoSchedule only scores


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """``v1.Toleration.ToleratesTaint``: an empty effect or key is a wildcard; ``Exists`` ignores the value."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return False  # an operator this version does not know


def untolerated_taint(pod: Pod, node: Node) -> Taint | None:
    """The first NoSchedule/NoExecute taint of ``node`` that no toleration of ``pod`` tolerates."""
    for taint in node.spec.taints:
        if taint.effect in _HARD_EFFECTS and not any(tolerates(t, taint) for t in pod.spec.tolerations):
            return taint
    return None


def _requirement_matches(requirement: NodeSelectorRequirement, value: str | None) -> bool:
    op = requirement.operator
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op == "In":
        return value is not None and value in requirement.values
    if op == "NotIn":
        return value is None or value not in requirement.values
    # Gt / Lt: one integer value; a missing or non-integer label never matches.
    if value is None or len(requirement.values) != 1:
        return False
    try:
        have, bound = int(value), int(requirement.values[0])
    except ValueError:
        return False
    return have > bound if op == "Gt" else have < bound


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    if not term.matchExpressions and not term.matchFields:
        return False  # an empty term selects no node
    labels = node.metadata.labels
    for requirement in term.matchExpressions:
        if not _requirement_matches(requirement, labels.get(requirement.key)):
            return False
    for requirement in term.matchFields:
        # The API server only allows metadata.name here; any other field cannot match.
        value = node.name if requirement.key == "metadata.name" else None
        if requirement.key != "metadata.name" or not _requirement_matches(requirement, value):
            return False
    return True


def matches_node_affinity(pod: Pod, node: Node) -> bool:
    """``nodeSelector`` (every pair) and required node affinity (any term, every requirement in it)."""
    labels = node.metadata.labels
    if any(labels.get(key) != value for key, value in pod.spec.nodeSelector.items()):
        return False
    terms = pod.spec.required_node_terms()
    return not terms or any(_term_matches(term, node) for term in terms)


def node_rejection(pod: Pod, node: Node) -> str | None:
    """Why ``pod`` may not run on ``node`` (kube-scheduler's wording), or ``None`` when it may."""
    if node.spec.unschedulable and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.spec.tolerations):
        return REASON_UNSCHEDULABLE
    taint = untolerated_taint(pod, node)
    if taint is not None:
        return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    if not matches_node_affinity(pod, node):
        return REASON_AFFINITY
    return None


def eligible_nodes(pod: Pod, nodes: Iterable[Node]) -> frozenset[str] | None:
    """Names of the nodes ``pod`` may run on, or ``None`` when every node passes (the solver's "no filter")."""
    node_list = list(nodes)
    passing = frozenset(node.name for node in node_list if node_rejection(pod, node) is None)
    return None if len(passing) == len(node_list) else passing


def rejections(pod: Pod, nodes: Iterable[Node]) -> Mapping[str, str]:
    """Node → reason for every node ``pod`` may not run on."""
    result = {}
    for node in nodes:
        reason = node_rejection(pod, node)
        if reason is not None:
            result[node.name] = reason
    return result
