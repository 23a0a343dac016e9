"""Grove's custom resources, with Grove's own field names.

Unknown fields are kept (``extra="allow"``) so an object read from the API server or a snapshot is written back
unchanged: the reconciler patches objects other controllers also touch, and a dropped field there is data loss.
Field names are camelCase exactly as in Grove's CRDs (``podgroups`` is lower-case there, too).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    StrictInt,
    model_serializer,
)

__all__ = [
    "ANNOTATION_MNNVL_GROUP",
    "ANNOTATION_TOPOLOGY_NAME",
    "COMPUTE_DOMAIN_API_VERSION",
    "FINALIZER_COMPUTE_DOMAIN",
    "FINALIZER_PCSG",
    "FINALIZER_PODCLIQUE",
    "GANG_GATE",
    "GROVE_API_PATH",
    "GROVE_API_VERSION",
    "GROVE_GROUP",
    "GROVE_VERSION",
    "LABEL_BASE_PODGANG",
    "LABEL_COMPONENT",
    "LABEL_MANAGED_BY",
    "LABEL_NAME",
    "LABEL_PART_OF",
    "LABEL_PCSG",
    "LABEL_PCSG_REPLICA_INDEX",
    "LABEL_PCS_REPLICA_INDEX",
    "LABEL_PODCLIQUE",
    "LABEL_PODGANG",
    "LABEL_POD_INDEX",
    "LABEL_SCHEDULER_NAME",
    "LABEL_TEMPLATE_HASH",
    "MANAGED_BY",
    "MAX_GROUP_PODS",
    "MNNVL_CLAIM",
    "MNNVL_OPT_OUT",
    "SCHEDULER_API_PATH",
    "SCHEDULER_API_VERSION",
    "SCHEDULER_GROUP",
    "AutoScalingConfig",
    "ClusterTopologyBinding",
    "GroveMeta",
    "NamespacedName",
    "PackConstraint",
    "PodCliqueScalingGroupConfig",
    "PodCliqueSet",
    "PodCliqueTemplate",
    "PodGang",
    "PodGangCondition",
    "PodGangSpec",
    "PodGangStatus",
    "PodGroup",
    "ResourceClaimTemplateConfig",
    "ResourceSharing",
    "SharingFilter",
    "TopologyConstraint",
    "TopologyConstraintGroupConfig",
    "TopologyLevel",
]

# Grove's API groups (PodCliqueSets and their children in one, PodGangs in the other), their one version, and the
# REST paths they are served under. Defined here once: the watches, the writers, the reconciler and the snapshot
# lister all address Grove's objects through these.
GROVE_GROUP = "grove.io"
SCHEDULER_GROUP = "scheduler.grove.io"
GROVE_VERSION = "v1alpha1"
GROVE_API_VERSION = f"{GROVE_GROUP}/{GROVE_VERSION}"
SCHEDULER_API_VERSION = f"{SCHEDULER_GROUP}/{GROVE_VERSION}"
GROVE_API_PATH = f"/apis/{GROVE_API_VERSION}"
SCHEDULER_API_PATH = f"/apis/{SCHEDULER_API_VERSION}"

# The recommended labels every object Grove makes for a PodCliqueSet carries; managed-by has Grove's value, so tools
# that select Grove's objects by it (kubectl -l, dashboards) find the reconciler's too.
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_PART_OF = "app.kubernetes.io/part-of"
LABEL_NAME = "app.kubernetes.io/name"
LABEL_COMPONENT = "app.kubernetes.io/component"
MANAGED_BY = "grove-operator"

# Grove's label and annotation keys, as its operator sets them, and the scheduling gate its pods are created with.
LABEL_PODGANG = "grove.io/podgang"
LABEL_BASE_PODGANG = "grove.io/base-podgang"
LABEL_PODCLIQUE = "grove.io/podclique"
LABEL_PCS_REPLICA_INDEX = "grove.io/podcliqueset-replica-index"
LABEL_PCSG = "grove.io/podcliquescalinggroup"
LABEL_PCSG_REPLICA_INDEX = "grove.io/podcliquescalinggroup-replica-index"
LABEL_POD_INDEX = "grove.io/podclique-pod-index"
LABEL_TEMPLATE_HASH = "grove.io/pod-template-hash"
LABEL_SCHEDULER_NAME = "grove.io/scheduler-name"
ANNOTATION_TOPOLOGY_NAME = "grove.io/topology-name"
GANG_GATE = "grove.io/podgang-pending-creation"
# MNNVL (GREP-417): the opt-in annotation (a group name, or "none" to opt out of a parent's), the claim a GPU pod
# gets, and the NVIDIA DRA driver's ComputeDomain the operator makes per PodCliqueSet replica and group.
ANNOTATION_MNNVL_GROUP = "grove.io/mnnvl-group"
MNNVL_OPT_OUT = "none"
MNNVL_CLAIM = "mnnvl-claim"
COMPUTE_DOMAIN_API_VERSION = "resource.nvidia.com/v1beta1"
FINALIZER_COMPUTE_DOMAIN = "grove.io/computedomain-finalizer"
# The finalizers Grove's operator puts on the PodCliques and scaling groups it creates, and removes when they go.
FINALIZER_PODCLIQUE = "grove.io/podclique.grove.io"
FINALIZER_PCSG = "grove.io/podcliquescalinggroup.grove.io"

MAX_GROUP_PODS = 10_000
"""The most pods one PodGroup may reference or guarantee. Grove's CRD sets no maximum, but a group beyond this is a
typo (``minReplicas: 1000000000``) that would otherwise be accepted and wait forever."""


class _Kept(BaseModel):
    """Base of every Grove model: unknown keys survive a parse/serialise round trip."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    # Fields written even when left at their default: the API server needs them to know what the object is.
    _always_written: ClassVar[frozenset[str]] = frozenset({"apiVersion", "kind"})

    def to_json_dict(self) -> dict[str, Any]:
        """The object as the API server would print it: unset optionals are left out, and so are fields nobody
        set that still hold their default (``uid: ""``, ``labels: {}``), so a read object writes back unchanged."""
        return self.model_dump(mode="json", exclude_none=True, context={_OMIT_DEFAULTS: True})

    @model_serializer(mode="wrap")
    def _omit_untouched_defaults(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict) or not (info.context or {}).get(_OMIT_DEFAULTS):
            return data
        for name, spec in type(self).model_fields.items():
            if name in self.model_fields_set or name in self._always_written or name not in data:
                continue
            # A default container mutated in place is not "set" to pydantic, so compare values, not flags.
            if getattr(self, name) == spec.get_default(call_default_factory=True):
                del data[name]
        return data


_OMIT_DEFAULTS = "grove-omit-defaults"


class GroveMeta(_Kept):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    generation: int | None = None
    resourceVersion: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    creationTimestamp: datetime | None = None
    deletionTimestamp: datetime | None = None
    ownerReferences: list[dict[str, Any]] = Field(default_factory=list)


class NamespacedName(_Kept):
    namespace: str = ""
    name: str

    def key_in(self, namespace: str) -> str:
        """``namespace/name``, with an empty namespace meaning the referring object's own."""
        return f"{self.namespace or namespace}/{self.name}"


class PackConstraint(_Kept):
    """Values are node-label keys in a PodGang (domain names in a PodCliqueSet: see ``TopologyConstraint``)."""

    required: str | None = None
    preferred: str | None = None


class PodGangTopologyConstraint(_Kept):
    packConstraint: PackConstraint | None = None


class PodGroup(_Kept):
    _always_written: ClassVar[frozenset[str]] = frozenset({"podReferences"})  # required by the CRD

    name: str
    podReferences: list[NamespacedName] = Field(default_factory=list, max_length=MAX_GROUP_PODS)
    # Strict: the API server stores an integer, and ``true`` read as 1 would hide a hand-editing mistake.
    minReplicas: int = Field(ge=0, le=MAX_GROUP_PODS, strict=True)
    topologyConstraint: PodGangTopologyConstraint | None = None


class TopologyConstraintGroupConfig(_Kept):
    _always_written: ClassVar[frozenset[str]] = frozenset({"podGroupNames"})

    name: str
    podGroupNames: list[str] = Field(default_factory=list)
    topologyConstraint: PodGangTopologyConstraint | None = None


class PodGangSpec(_Kept):
    podgroups: list[PodGroup]
    topologyConstraint: PodGangTopologyConstraint | None = None
    topologyConstraintGroupConfigs: list[TopologyConstraintGroupConfig] = Field(default_factory=list)
    priorityClassName: str | None = None
    reuseReservationRef: NamespacedName | None = None


class PodGangCondition(_Kept):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str | None = None
    message: str | None = None
    lastTransitionTime: datetime | None = None
    observedGeneration: int | None = None


class PodGangStatus(_Kept):
    _always_written: ClassVar[frozenset[str]] = frozenset({"phase"})  # required by the CRD

    phase: Literal["Pending", "Starting", "Running"] = "Pending"
    conditions: list[PodGangCondition] = Field(default_factory=list)
    placementScore: float | None = None


class PodGang(_Kept):
    apiVersion: str = SCHEDULER_API_VERSION
    kind: Literal["PodGang"] = "PodGang"
    metadata: GroveMeta
    spec: PodGangSpec
    status: PodGangStatus | None = None

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    def member_keys(self) -> list[str]:
        """Every referenced pod as ``namespace/name``, group by group, in reference order."""
        namespace = self.metadata.namespace
        return [ref.key_in(namespace) for group in self.spec.podgroups for ref in group.podReferences]


# --- grove.io/v1alpha1: PodCliqueSet and ClusterTopologyBinding ------------------------------------------------


class DomainPack(_Kept):
    """Pack by topology *domain name* (``rack``, ``block``…), resolved through a ClusterTopologyBinding."""

    required: str | None = None
    preferred: str | None = None


class TopologyConstraint(_Kept):
    topologyName: str | None = None
    pack: DomainPack | None = None
    packDomain: str | None = None  # deprecated: treated as pack.required


class AutoScalingConfig(_Kept):
    """A clique's ``autoScalingConfig`` or a group's ``scaleConfig``: the HPA's bounds and metrics (autoscaling/v2
    ``MetricSpec`` objects, kept as they are)."""

    minReplicas: StrictInt | None = None
    maxReplicas: StrictInt
    metrics: list[dict[str, Any]] | None = None


# Counts are StrictInt: `replicas: true` or "3" is a mistake to name, not a 1 or a 3 to guess (the API server's
# schema refuses them too).
class PodCliqueSpec(_Kept):
    roleName: str = ""
    podSpec: dict[str, Any] = Field(default_factory=dict)
    replicas: StrictInt = 0
    minAvailable: StrictInt | None = None
    startsAfter: list[str] = Field(default_factory=list)
    autoScalingConfig: AutoScalingConfig | None = None


class ResourceClaimTemplateConfig(_Kept):
    """A PodCliqueSet's named ``resourceClaimTemplates`` entry: a ``resource.k8s.io`` ResourceClaimTemplate's spec
    (``metadata``, ``spec``), kept as written."""

    name: str = ""
    templateSpec: dict[str, Any] = Field(default_factory=dict)


class SharingFilter(_Kept):
    """Which children get a shared claim: cliques (by template name) and, at PodCliqueSet level, scaling groups."""

    childCliqueNames: list[str] = Field(default_factory=list)
    childScalingGroupNames: list[str] = Field(default_factory=list)


class ResourceSharing(_Kept):
    """A ``resourceSharing`` entry: ResourceClaims made from the template ``name`` (the PodCliqueSet's own
    ``resourceClaimTemplates`` first, else a ResourceClaimTemplate object in ``namespace``, default the
    PodCliqueSet's), one per owner (``AllReplicas``) or one per owner replica (``PerReplica``). ``filter`` exists at
    PodCliqueSet and scaling-group level only."""

    name: str = ""
    namespace: str = ""
    scope: str = ""
    filter: SharingFilter | None = None


class PodCliqueTemplate(_Kept):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    topologyConstraint: TopologyConstraint | None = None
    resourceSharing: list[ResourceSharing] = Field(default_factory=list)
    spec: PodCliqueSpec


class PodCliqueScalingGroupConfig(_Kept):
    name: str
    cliqueNames: list[str] = Field(default_factory=list)
    replicas: StrictInt | None = None
    minAvailable: StrictInt | None = None
    scaleConfig: AutoScalingConfig | None = None
    annotations: dict[str, str] = Field(default_factory=dict)
    topologyConstraint: TopologyConstraint | None = None
    resourceSharing: list[ResourceSharing] = Field(default_factory=list)


class PodCliqueSetTemplate(_Kept):
    cliques: list[PodCliqueTemplate] = Field(default_factory=list)
    cliqueStartupType: str | None = None
    priorityClassName: str | None = None
    topologyConstraint: TopologyConstraint | None = None
    terminationDelay: str | None = None
    headlessServiceConfig: dict[str, Any] | None = None
    resourceClaimTemplates: list[ResourceClaimTemplateConfig] = Field(default_factory=list)
    resourceSharing: list[ResourceSharing] = Field(default_factory=list)
    podCliqueScalingGroups: list[PodCliqueScalingGroupConfig] = Field(default_factory=list)


class PodCliqueSetSpec(_Kept):
    replicas: StrictInt = 0
    updateStrategy: dict[str, Any] | None = None
    template: PodCliqueSetTemplate


class PodCliqueSet(_Kept):
    apiVersion: str = GROVE_API_VERSION
    kind: Literal["PodCliqueSet"] = "PodCliqueSet"
    metadata: GroveMeta
    spec: PodCliqueSetSpec
    status: dict[str, Any] | None = None

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


class TopologyLevel(_Kept):
    domain: str
    key: str


class ClusterTopologyBindingSpec(_Kept):
    levels: list[TopologyLevel] = Field(min_length=1)
    schedulerTopologyBindings: list[dict[str, Any]] = Field(default_factory=list)


class ClusterTopologyBinding(_Kept):
    apiVersion: str = GROVE_API_VERSION
    kind: Literal["ClusterTopologyBinding"] = "ClusterTopologyBinding"
    metadata: GroveMeta
    spec: ClusterTopologyBindingSpec
