"""The parts of core/v1 Pod and Node a gang scheduler reads.

Everything else is ignored on parse: the filter hot path must not pay for fields nobody reads, and these models
are never written back to the API server (status writes go through Grove objects and bindings).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from api.quantity import QuantityError, check_units, resource_units

__all__ = [
    "PREEMPT_NEVER",
    "Container",
    "Node",
    "NodeList",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectMeta",
    "OwnerReference",
    "Pod",
    "PodResourceClaim",
    "PodSpec",
    "PriorityClass",
    "ResourceVector",
    "Taint",
    "Toleration",
    "effective_quantities",
    "sum_requests",
    "unusable_node",
]

ResourceVector = dict[str, int]
"""Resource name → integer units (millicores for ``cpu``, bytes for ``memory``, counts otherwise)."""

PREEMPT_NEVER = "Never"
"""A ``preemptionPolicy`` that queues a pod (or gang) by its priority but never makes others make way for it."""

GPU = "nvidia.com/gpu"
"""The GPU resource, as NVIDIA's device plugin names it. ``topology.graph.GPU_RESOURCE`` spells it too: topology
imports nothing of ours."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


def _check_quantities(value: Any) -> Any:
    if value is None:
        return {}
    if not isinstance(value, dict):
        return value  # not a map: pydantic's own dict check names the field
    for name, raw in value.items():
        try:
            check_units(str(name), raw)
        except QuantityError as err:
            raise ValueError(f"{name}: {err}") from None
    return value


Quantities = Annotated[dict[str, Any], BeforeValidator(_check_quantities)]
"""A ``{resource: quantity}`` map whose every value is checked to parse and to lie between 0 and the resource's
sane maximum (``api.quantity.check_units``), so errors name the resource and nothing downstream can overflow."""


def _units(quantities: dict[str, Any]) -> ResourceVector:
    return {name: resource_units(name, raw) for name, raw in quantities.items()}


class OwnerReference(_Model):
    apiVersion: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(_Model):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    creationTimestamp: datetime | None = None
    deletionTimestamp: datetime | None = None
    ownerReferences: list[OwnerReference] = Field(default_factory=list)
    # Who owns a field of the status subresource (``managedFields`` entries for ``status``), as the watch decoder
    # (``scheduler.kube.decoding``) reads it for a pod whose status names a nominated node, and for no other: the
    # model itself skips ``managedFields``, whose entries would cost every decode of every pod of ours. Never
    # written back.
    status_managers: tuple[str, ...] = Field(default=(), exclude=True)

    @field_validator("labels", "annotations", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value


class Toleration(_Model):
    key: str = ""
    # Not a Literal: newer API servers add operators (Kubernetes 1.35 added Gt/Lt behind a gate). A pod we cannot
    # reason about must still parse — refusing it would fail kube-scheduler's whole filter call — and an operator
    # we do not know tolerates nothing, as in kube-scheduler's own switch.
    operator: str = ""
    value: str = ""
    effect: str = ""
    tolerationSeconds: int | None = None


class Taint(_Model):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class NodeSelectorRequirement(_Model):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = Field(default_factory=list)


class NodeSelectorTerm(_Model):
    matchExpressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    matchFields: list[NodeSelectorRequirement] = Field(default_factory=list)


class _NodeSelector(_Model):
    nodeSelectorTerms: list[NodeSelectorTerm] = Field(default_factory=list)


class _NodeAffinity(_Model):
    requiredDuringSchedulingIgnoredDuringExecution: _NodeSelector | None = None


class _Affinity(_Model):
    nodeAffinity: _NodeAffinity | None = None


class _Resources(_Model):
    requests: Quantities = Field(default_factory=dict)
    limits: Quantities = Field(default_factory=dict)

    def effective_requests(self) -> ResourceVector:
        return _units(effective_quantities(self.requests, self.limits))


class Container(_Model):
    name: str = ""
    resources: _Resources = Field(default_factory=_Resources)
    restartPolicy: str | None = None


class _SchedulingGate(_Model):
    name: str


class PodResourceClaim(_Model):
    """A DRA claim in a pod: an existing ResourceClaim, or one made per pod from a ResourceClaimTemplate."""

    name: str = ""
    resourceClaimName: str | None = None
    resourceClaimTemplateName: str | None = None


class PodSpec(_Model):
    containers: list[Container] = Field(default_factory=list)
    initContainers: list[Container] = Field(default_factory=list)
    overhead: Quantities = Field(default_factory=dict)
    nodeSelector: dict[str, str] = Field(default_factory=dict)
    affinity: _Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    schedulingGates: list[_SchedulingGate] = Field(default_factory=list)
    nodeName: str = ""
    schedulerName: str = ""
    priority: int | None = None
    priorityClassName: str = ""
    # None: PreemptLowerPriority, the API's default (admission copies the pod's PriorityClass's policy here).
    preemptionPolicy: str | None = None
    resourceClaims: list[PodResourceClaim] = Field(default_factory=list)

    @field_validator("nodeSelector", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("containers", "initContainers", "tolerations", "schedulingGates", "resourceClaims", mode="before")
    @classmethod
    def _none_is_empty_list(cls, value: Any) -> Any:
        return [] if value is None else value

    def required_node_terms(self) -> list[NodeSelectorTerm]:
        """The OR-ed terms of required node affinity; empty when the pod has none."""
        affinity = self.affinity.nodeAffinity if self.affinity else None
        selector = affinity.requiredDuringSchedulingIgnoredDuringExecution if affinity else None
        return selector.nodeSelectorTerms if selector else []


class _PodStatus(_Model):
    phase: str = ""
    # Who else may have nominated the pod (kube-scheduler after its own preemption): the extender overwrites only
    # nominations it wrote itself.
    nominatedNodeName: str = ""


class Pod(_Model):
    apiVersion: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
    status: _PodStatus = Field(default_factory=_PodStatus)

    @property
    def key(self) -> str:
        """``namespace/name``, the identity used across the project."""
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def gated(self) -> bool:
        return bool(self.spec.schedulingGates)

    def gated_only_by(self, gate: str) -> bool:
        """Gated, and by ``gate`` alone."""
        return bool(self.spec.schedulingGates) and all(held.name == gate for held in self.spec.schedulingGates)

    @property
    def terminal(self) -> bool:
        """A pod that holds no capacity any more."""
        return self.status.phase in ("Succeeded", "Failed")

    @property
    def deleting(self) -> bool:
        """Being deleted (evicted, preempted, scaled in): it still holds its node's capacity until its kubelet is
        done with it, but it is no longer a member a gang can count on."""
        return self.metadata.deletionTimestamp is not None

    def requests(self) -> ResourceVector:
        """What the pod needs on a node, as kube-scheduler computes it (``sum_requests``)."""
        return sum_requests(
            containers=[c.resources.effective_requests() for c in self.spec.containers],
            init_containers=[
                (i.resources.effective_requests(), i.restartPolicy == "Always") for i in self.spec.initContainers
            ],
            overhead=_units(self.spec.overhead),
        )


def effective_quantities(requests: dict[str, Any] | None, limits: dict[str, Any] | None) -> dict[str, Any]:
    """A container's requests, a missing one defaulting to its limit (the API server defaults it so; hand-written
    snapshots skip defaulting)."""
    return {**(limits or {}), **(requests or {})}


def sum_requests(
    *,
    containers: Sequence[ResourceVector],
    init_containers: Sequence[tuple[ResourceVector, bool]],
    overhead: ResourceVector,
) -> ResourceVector:
    """What a pod needs on a node, as kube-scheduler computes it, from each container's effective requests
    (``init_containers``: with whether it restarts, i.e. is a sidecar).

    Sum over app containers (plus restartable "sidecar" init containers, which keep running), against the
    largest single init container (each runs alone, beside the sidecars started before it), plus overhead,
    plus one ``pods`` slot.
    """
    total: ResourceVector = {}
    init_peak: ResourceVector = {}
    sidecars: ResourceVector = {}
    for need, restarts in init_containers:
        if restarts:
            _add(sidecars, need)
            continue
        for name, amount in need.items():
            init_peak[name] = max(init_peak.get(name, 0), amount + sidecars.get(name, 0))
    for need in containers:
        _add(total, need)
    _add(total, sidecars)
    for name, amount in init_peak.items():
        total[name] = max(total.get(name, 0), amount)
    _add(total, overhead)
    total["pods"] = total.get("pods", 0) + 1
    return {name: amount for name, amount in total.items() if amount > 0}


def _add(into: ResourceVector, other: ResourceVector) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + amount


class _NodeSpec(_Model):
    unschedulable: bool = False
    taints: list[Taint] = Field(default_factory=list)

    @field_validator("taints", mode="before")
    @classmethod
    def _none_is_empty_list(cls, value: Any) -> Any:
        return [] if value is None else value


class _NodeStatus(_Model):
    allocatable: Quantities = Field(default_factory=dict)
    capacity: Quantities = Field(default_factory=dict)


class Node(_Model):
    apiVersion: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: _NodeSpec = Field(default_factory=_NodeSpec)
    status: _NodeStatus = Field(default_factory=_NodeStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    def allocatable(self) -> ResourceVector:
        """Allocatable units (falls back to capacity when a hand-made node has no allocatable)."""
        return _units(self.status.allocatable or self.status.capacity)


class NodeList(_Model):
    apiVersion: str = "v1"
    kind: str = "NodeList"
    items: list[Node] = Field(default_factory=list)

    @field_validator("items", mode="before")
    @classmethod
    def _none_is_empty_list(cls, value: Any) -> Any:
        return [] if value is None else value


def unusable_node(raw: Any) -> Node | None:
    """A stand-in for a Node object that does not validate (a kubelet or device plugin reporting
    ``nvidia.com/gpu: 1e40``): the name alone, cordoned and without capacity, so the node stays known for the pods
    bound to it while nothing is planned there. ``None`` when not even a name can be read."""
    metadata = raw.get("metadata") if isinstance(raw, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        return None
    return Node(metadata=ObjectMeta(name=name), spec=_NodeSpec(unschedulable=True))


class PriorityClass(_Model):
    """``scheduling.k8s.io/v1`` PriorityClass: what a ``priorityClassName`` means. ``globalDefault``: the value of
    pods (and here, of gangs) that name no class."""

    apiVersion: str = "scheduling.k8s.io/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    value: int = 0
    globalDefault: bool = False
    preemptionPolicy: str = "PreemptLowerPriority"

    @property
    def name(self) -> str:
        return self.metadata.name
