"""kube-scheduler's extender wire format (``k8s.io/kube-scheduler/extender/v1``).

The Go types carry no json tags, so every key is the PascalCase field name. Verified against the recordings in
``shared/fixtures/kube-scheduler-v1.36``. With ``nodeCacheCapable: false`` kube-scheduler sends a full ``Nodes``
list and ``NodeNames`` is null; with ``true`` it sends ``NodeNames`` and ``Nodes`` is null. Replies must answer
in the same mode.

The Pod kube-scheduler sends (and preempt's victims) is read for its identity alone (``PodRef``): the extender
decides from the API's copy of a pod (its watch's), never from a caller's, so decoding the rest of a Pod would be
work on every filter that nothing reads (``python -m benchmarks.bench_http`` measures filter's decode; figures in
docs/bench_http.md).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, RootModel

from api.core import NodeList, Pod

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "ExtenderArgs",
    "ExtenderBindingArgs",
    "ExtenderBindingResult",
    "ExtenderFilterResult",
    "ExtenderPreemptionArgs",
    "ExtenderPreemptionResult",
    "HostPriority",
    "HostPriorityList",
    "MetaPod",
    "MetaVictims",
    "PodRef",
    "PreemptorRef",
    "Victims",
]

MAX_EXTENDER_PRIORITY = 10
"""kube-scheduler scales an extender's score by ``weight × (MaxNodeScore / MaxExtenderPriority)`` = ×10."""


class _Wire(BaseModel):
    # Unknown keys are ignored, not rejected: a newer kube-scheduler may add fields.
    model_config = ConfigDict(extra="ignore")


class _PodRefMeta(_Wire):
    name: str = ""
    namespace: str = ""
    uid: str = ""


class _PodRefStatus(_Wire):
    # The node kube-scheduler is trying alone, first, in this cycle: a preemption's, or the extender's own plan.
    nominatedNodeName: str = ""


class PodRef(_Wire):
    """A Pod as a request names it: which pod and the node it is nominated to, nothing of what it asks for."""

    metadata: _PodRefMeta = Field(default_factory=_PodRefMeta)
    status: _PodRefStatus = Field(default_factory=_PodRefStatus)

    @property
    def key(self) -> str:
        """``namespace/name``, as ``api.core.Pod.key``."""
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @classmethod
    def of(cls, pod: Pod) -> PodRef:
        meta = pod.metadata
        return cls(metadata=_PodRefMeta(name=meta.name, namespace=meta.namespace, uid=meta.uid))


class ExtenderArgs(_Wire):
    """Body of ``filter`` and ``prioritize``."""

    Pod: PodRef
    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None

    def candidate_names(self) -> list[str]:
        """The nodes kube-scheduler asks about, in its order, whichever mode it is in."""
        if self.NodeNames is not None:
            return list(self.NodeNames)
        if self.Nodes is not None:
            return [node.name for node in self.Nodes.items]
        return []


class ExtenderFilterResult(_Wire):
    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None
    FailedNodes: dict[str, str] = Field(default_factory=dict)
    FailedAndUnresolvableNodes: dict[str, str] = Field(default_factory=dict)
    Error: str = ""


class HostPriority(_Wire):
    Host: str
    Score: int = Field(ge=0, le=MAX_EXTENDER_PRIORITY)


class HostPriorityList(RootModel[list[HostPriority]]):
    """Reply of ``prioritize``: a bare JSON array."""


class ExtenderBindingArgs(_Wire):
    PodName: str
    PodNamespace: str
    PodUID: str
    Node: str


class ExtenderBindingResult(_Wire):
    Error: str = ""


class MetaPod(_Wire):
    UID: str


class MetaVictims(_Wire):
    Pods: list[MetaPod] = Field(default_factory=list)
    NumPDBViolations: int = 0


class Victims(_Wire):
    Pods: list[PodRef] = Field(default_factory=list)
    NumPDBViolations: int = 0


class _PreemptorSpec(_Wire):
    priority: int | None = None


class PreemptorRef(PodRef):
    """The pod ``preempt`` is asked about: its identity and the priority kube-scheduler judged victims by (the
    preemption guard compares it with the victims' gangs', which kube-scheduler does not know)."""

    spec: _PreemptorSpec = Field(default_factory=_PreemptorSpec)


class ExtenderPreemptionArgs(_Wire):
    """Body of ``preempt``: full victims when ``nodeCacheCapable`` is false, UIDs only when it is true."""

    Pod: PreemptorRef
    NodeNameToVictims: dict[str, Victims] | None = None
    NodeNameToMetaVictims: dict[str, MetaVictims] | None = None

    def victim_uids(self) -> dict[str, list[str]]:
        """Node → victim pod UIDs, whichever of the two maps kube-scheduler filled."""
        if self.NodeNameToMetaVictims is not None:
            return {node: [p.UID for p in v.Pods] for node, v in self.NodeNameToMetaVictims.items()}
        if self.NodeNameToVictims is not None:
            return {node: [p.metadata.uid for p in v.Pods] for node, v in self.NodeNameToVictims.items()}
        return {}


class ExtenderPreemptionResult(_Wire):
    NodeNameToMetaVictims: dict[str, MetaVictims] = Field(default_factory=dict)
