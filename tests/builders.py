"""Fluent builders for test objects, in the style of kube-scheduler's ``st.MakePod().Req(...).Obj()``.

Each builder accumulates a raw Kubernetes-shaped dict (what the API server or a snapshot would hold), so
``.dict()`` gives wire JSON for snapshots and HTTP bodies, and ``.obj()`` parses that dict with the real model —
tests exercise the same parsing path production does.

    make_node("n1").gpus(8).cpu("96").label("k", "v").taint("k", effect="NoSchedule").unschedulable().obj()
    make_pod("p").ns("default").gpus(4).cpu("8").gang("g").clique("c").gated().on("n1").obj()
    make_podgang("g").group("c", pods=["p0", "p1"], min_replicas=2).pack(required="kubernetes.io/hostname").obj()
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any, Self

from api.core import Node, Pod
from api.grove import GANG_GATE, LABEL_PODGANG, ClusterTopologyBinding, PodGang

__all__ = [
    "NodeBuilder",
    "PodBuilder",
    "PodGangBuilder",
    "TopologyBindingBuilder",
    "make_node",
    "make_pod",
    "make_podgang",
    "make_topology_binding",
]

GPU = "nvidia.com/gpu"
LABEL_PODCLIQUE = "grove.io/podclique"
HOSTNAME = "kubernetes.io/hostname"


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._d: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {HOSTNAME: name}},
            "spec": {},
            "status": {"allocatable": {"cpu": "96", "memory": "1000Gi", "pods": "110"}},
        }

    def alloc(self, resource: str, quantity: str | int) -> Self:
        self._d["status"]["allocatable"][resource] = str(quantity)
        return self

    def gpus(self, count: int) -> Self:
        return self.alloc(GPU, count)

    def cpu(self, quantity: str) -> Self:
        return self.alloc("cpu", quantity)

    def memory(self, quantity: str) -> Self:
        return self.alloc("memory", quantity)

    def label(self, key: str, value: str) -> Self:
        self._d["metadata"]["labels"][key] = value
        return self

    def labels(self, labels: dict[str, str]) -> Self:
        self._d["metadata"]["labels"].update(labels)
        return self

    def no_hostname_label(self) -> Self:
        del self._d["metadata"]["labels"][HOSTNAME]
        return self

    def taint(self, key: str, value: str = "", *, effect: str = "NoSchedule") -> Self:
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        self._d["spec"].setdefault("taints", []).append(taint)
        return self

    def unschedulable(self) -> Self:
        self._d["spec"]["unschedulable"] = True
        return self

    def dict(self) -> dict[str, Any]:
        raw = copy.deepcopy(self._d)
        raw["status"]["capacity"] = dict(raw["status"]["allocatable"])
        return raw

    def obj(self) -> Node:
        return Node.model_validate(self.dict())


class PodBuilder:
    def __init__(self, name: str) -> None:
        self._d: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {}},
            "spec": {"schedulerName": "grove", "containers": [{"name": "main", "resources": {}}]},
            "status": {"phase": "Pending"},
        }

    @property
    def _main(self) -> dict[str, Any]:
        resources: dict[str, Any] = self._d["spec"]["containers"][0]["resources"]
        return resources

    def ns(self, namespace: str) -> Self:
        self._d["metadata"]["namespace"] = namespace
        return self

    def uid(self, uid: str) -> Self:
        self._d["metadata"]["uid"] = uid
        return self

    def req(self, resource: str, quantity: str | int) -> Self:
        """A request on the main container."""
        self._main.setdefault("requests", {})[resource] = str(quantity)
        return self

    def limit(self, resource: str, quantity: str | int) -> Self:
        """A limit on the main container (with no request, the API server would default the request to it)."""
        self._main.setdefault("limits", {})[resource] = str(quantity)
        return self

    def claim(self, name: str, *, template: str | None = None) -> Self:
        """A DRA claim in the pod (an existing ResourceClaim ``name``, or one made from ``template``), used by the
        main container."""
        source = {"resourceClaimTemplateName": template} if template else {"resourceClaimName": name}
        self._d["spec"].setdefault("resourceClaims", []).append({"name": name, **source})
        self._main.setdefault("claims", []).append({"name": name})
        return self

    def gpus(self, count: int) -> Self:
        # Extended resources must have request == limit; set both as real manifests do.
        return self.req(GPU, count).limit(GPU, count)

    def cpu(self, quantity: str) -> Self:
        return self.req("cpu", quantity)

    def memory(self, quantity: str) -> Self:
        return self.req("memory", quantity)

    def container(self, name: str, *, requests: dict[str, str] | None = None) -> Self:
        """Another app container next to ``main``."""
        self._d["spec"]["containers"].append({"name": name, "resources": {"requests": dict(requests or {})}})
        return self

    def init_container(self, name: str, *, requests: dict[str, str], sidecar: bool = False) -> Self:
        """An init container; ``sidecar`` makes it restartable (``restartPolicy: Always``), so it keeps running."""
        container: dict[str, Any] = {"name": name, "resources": {"requests": dict(requests)}}
        if sidecar:
            container["restartPolicy"] = "Always"
        self._d["spec"].setdefault("initContainers", []).append(container)
        return self

    def overhead(self, resource: str, quantity: str) -> Self:
        self._d["spec"].setdefault("overhead", {})[resource] = quantity
        return self

    def label(self, key: str, value: str) -> Self:
        self._d["metadata"]["labels"][key] = value
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._d["metadata"].setdefault("annotations", {})[key] = value
        return self

    def gang(self, name: str) -> Self:
        return self.label(LABEL_PODGANG, name)

    def clique(self, name: str) -> Self:
        return self.label(LABEL_PODCLIQUE, name)

    def gated(self, gate: str = GANG_GATE) -> Self:
        self._d["spec"].setdefault("schedulingGates", []).append({"name": gate})
        return self

    def on(self, node: str) -> Self:
        """Bound to ``node`` and running, as a pod that already holds capacity."""
        self._d["spec"]["nodeName"] = node
        self._d["status"]["phase"] = "Running"
        return self

    def phase(self, phase: str) -> Self:
        self._d["status"]["phase"] = phase
        return self

    def priority(self, value: int) -> Self:
        self._d["spec"]["priority"] = value
        return self

    def scheduler(self, name: str) -> Self:
        self._d["spec"]["schedulerName"] = name
        return self

    def node_selector(self, key: str, value: str) -> Self:
        self._d["spec"].setdefault("nodeSelector", {})[key] = value
        return self

    def toleration(
        self, key: str = "", value: str = "", *, operator: str = "Equal", effect: str = "", seconds: int | None = None
    ) -> Self:
        toleration: dict[str, Any] = {"key": key, "operator": operator, "value": value, "effect": effect}
        if seconds is not None:
            toleration["tolerationSeconds"] = seconds
        self._d["spec"].setdefault("tolerations", []).append(toleration)
        return self

    def affinity_term(
        self,
        expressions: Iterable[tuple[str, str, Sequence[str]]] = (),
        *,
        fields: Iterable[tuple[str, str, Sequence[str]]] = (),
    ) -> Self:
        """Add one required node-affinity term (terms are OR-ed; requirements inside a term are AND-ed).

        Each requirement is ``(key, operator, values)``.
        """

        def requirements(items: Iterable[tuple[str, str, Sequence[str]]]) -> list[dict[str, Any]]:
            return [{"key": key, "operator": op, "values": list(values)} for key, op, values in items]

        term: dict[str, Any] = {}
        if exprs := requirements(expressions):
            term["matchExpressions"] = exprs
        if field_reqs := requirements(fields):
            term["matchFields"] = field_reqs
        affinity = self._d["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
        selector = affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []})
        selector["nodeSelectorTerms"].append(term)
        return self

    def deleting(self, timestamp: str = "2026-01-01T00:00:00Z") -> Self:
        self._d["metadata"]["deletionTimestamp"] = timestamp
        return self

    def dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._d)

    def obj(self) -> Pod:
        return Pod.model_validate(self.dict())


class PodGangBuilder:
    def __init__(self, name: str) -> None:
        self._d: dict[str, Any] = {
            "apiVersion": "scheduler.grove.io/v1alpha1",
            "kind": "PodGang",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"podgroups": []},
        }

    def ns(self, namespace: str) -> Self:
        self._d["metadata"]["namespace"] = namespace
        return self

    def group(
        self,
        name: str,
        *,
        pods: Sequence[str | Pod],
        min_replicas: int | None = None,
        required: str | None = None,
        preferred: str | None = None,
    ) -> Self:
        """A PodGroup; ``pods`` are names (in this gang's namespace), ``ns/name`` keys or Pods.

        ``min_replicas`` defaults to every pod; ``required``/``preferred`` set the group's own pack constraint.
        """
        namespace = self._d["metadata"]["namespace"]
        references = []
        for pod in pods:
            if isinstance(pod, Pod):
                references.append({"namespace": pod.metadata.namespace, "name": pod.metadata.name})
            elif "/" in pod:
                pod_ns, pod_name = pod.split("/", 1)
                references.append({"namespace": pod_ns, "name": pod_name})
            else:
                references.append({"namespace": namespace, "name": pod})
        group: dict[str, Any] = {
            "name": name,
            "podReferences": references,
            "minReplicas": len(references) if min_replicas is None else min_replicas,
        }
        if required or preferred:
            group["topologyConstraint"] = _constraint(required, preferred)
        self._d["spec"]["podgroups"].append(group)
        return self

    def pack(self, *, required: str | None = None, preferred: str | None = None) -> Self:
        """The gang-wide pack constraint (``spec.topologyConstraint``)."""
        self._d["spec"]["topologyConstraint"] = _constraint(required, preferred)
        return self

    def group_config(
        self, name: str, *, groups: Sequence[str], required: str | None = None, preferred: str | None = None
    ) -> Self:
        """A ``topologyConstraintGroupConfigs`` entry over some of the PodGroups."""
        self._d["spec"].setdefault("topologyConstraintGroupConfigs", []).append(
            {"name": name, "podGroupNames": list(groups), "topologyConstraint": _constraint(required, preferred)}
        )
        return self

    def priority_class(self, name: str) -> Self:
        self._d["spec"]["priorityClassName"] = name
        return self

    def created(self, timestamp: str) -> Self:
        self._d["metadata"]["creationTimestamp"] = timestamp
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._d["metadata"].setdefault("annotations", {})[key] = value
        return self

    def dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._d)

    def obj(self) -> PodGang:
        return PodGang.model_validate(self.dict())


class TopologyBindingBuilder:
    def __init__(self, name: str, levels: Sequence[tuple[str, str]]) -> None:
        self._d: dict[str, Any] = {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "ClusterTopologyBinding",
            "metadata": {"name": name},
            "spec": {"levels": [{"domain": domain, "key": key} for domain, key in levels]},
        }

    def dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._d)

    def obj(self) -> ClusterTopologyBinding:
        return ClusterTopologyBinding.model_validate(self.dict())


def _constraint(required: str | None, preferred: str | None) -> dict[str, Any]:
    pack = {key: value for key, value in (("required", required), ("preferred", preferred)) if value}
    return {"packConstraint": pack}


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def make_pod(name: str) -> PodBuilder:
    return PodBuilder(name)


def make_podgang(name: str) -> PodGangBuilder:
    return PodGangBuilder(name)


def make_topology_binding(name: str, levels: Sequence[tuple[str, str]]) -> TopologyBindingBuilder:
    """A Grove ClusterTopologyBinding; ``levels`` are ``(domain, node-label key)`` pairs, broad → narrow."""
    return TopologyBindingBuilder(name, levels)
