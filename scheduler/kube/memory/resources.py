"""The resources the fake API server serves, how their REST paths look, and the Kubernetes ``v1.Status`` error.

Tests name a resource by ``"<apiVersion>/<plural>"`` (``PODS``, ``PODGANGS`` …), the same key the URL carries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from api.grove import GROVE_API_VERSION, SCHEDULER_API_VERSION

__all__ = [
    "CORE",
    "CORE_EVENTS",
    "DISRUPTION_BUDGETS",
    "EVENTS",
    "HPAS",
    "LEASES",
    "NODES",
    "PODCLIQUES",
    "PODCLIQUESCALINGGROUPS",
    "PODCLIQUESETS",
    "PODGANGS",
    "PODS",
    "PRIORITY_CLASSES",
    "RESOURCES",
    "ROLEBINDINGS",
    "ROLES",
    "SERVICEACCOUNTS",
    "SERVICES",
    "TOPOLOGY_BINDINGS",
    "Resource",
    "Scale",
    "StatusError",
    "parse_path",
    "resource_for",
    "status_body",
]

CORE = "v1"


@dataclass(frozen=True)
class Scale:
    """A CRD's ``scale`` subresource: the JSON paths (``.spec.replicas``) behind an ``autoscaling/v1`` Scale."""

    spec_replicas: str
    status_replicas: str
    label_selector: str | None = None


@dataclass(frozen=True)
class Resource:
    """One served resource: its kind, whether it is namespaced, whether ``status`` is a subresource (then
    writes to the main resource never change status, and a create starts it afresh), its ``scale``, and the keys
    its schema requires in ``status`` once a status write makes one (kube-apiserver refuses the write without them)."""

    kind: str
    namespaced: bool
    status_subresource: bool = False
    scale: Scale | None = None
    status_required: tuple[str, ...] = ()

    @staticmethod
    def api_version(key: str) -> str:
        return key.rsplit("/", 1)[0]


NODES = "v1/nodes"
PODS = "v1/pods"
SERVICES = "v1/services"
CORE_EVENTS = "v1/events"
PODGANGS = f"{SCHEDULER_API_VERSION}/podgangs"
PODCLIQUESETS = f"{GROVE_API_VERSION}/podcliquesets"
TOPOLOGY_BINDINGS = f"{GROVE_API_VERSION}/clustertopologybindings"
PODCLIQUES = f"{GROVE_API_VERSION}/podcliques"
PODCLIQUESCALINGGROUPS = f"{GROVE_API_VERSION}/podcliquescalinggroups"
LEASES = "coordination.k8s.io/v1/leases"
EVENTS = "events.k8s.io/v1/events"
HPAS = "autoscaling/v2/horizontalpodautoscalers"
SERVICEACCOUNTS = "v1/serviceaccounts"
ROLES = "rbac.authorization.k8s.io/v1/roles"
ROLEBINDINGS = "rbac.authorization.k8s.io/v1/rolebindings"
PRIORITY_CLASSES = "scheduling.k8s.io/v1/priorityclasses"
DISRUPTION_BUDGETS = "policy/v1/poddisruptionbudgets"

RESOURCES: dict[str, Resource] = {
    NODES: Resource("Node", namespaced=False, status_subresource=True),
    PODS: Resource("Pod", namespaced=True, status_subresource=True),
    SERVICES: Resource("Service", namespaced=True, status_subresource=True),
    "v1/secrets": Resource("Secret", namespaced=True),
    CORE_EVENTS: Resource("Event", namespaced=True),
    PODGANGS: Resource("PodGang", namespaced=True, status_subresource=True, status_required=("phase",)),
    PODCLIQUESETS: Resource(
        "PodCliqueSet",
        namespaced=True,
        status_subresource=True,
        scale=Scale(".spec.replicas", ".status.replicas", ".status.hpaPodSelector"),
    ),
    # The paths of Grove's CRDs (and ours in deploy/crds): PodClique's selector field is `hpaPodSelector`.
    PODCLIQUES: Resource(
        "PodClique",
        namespaced=True,
        status_subresource=True,
        scale=Scale(".spec.replicas", ".status.replicas", ".status.hpaPodSelector"),
    ),
    PODCLIQUESCALINGGROUPS: Resource(
        "PodCliqueScalingGroup",
        namespaced=True,
        status_subresource=True,
        scale=Scale(".spec.replicas", ".status.replicas", ".status.selector"),
    ),
    HPAS: Resource("HorizontalPodAutoscaler", namespaced=True, status_subresource=True),
    SERVICEACCOUNTS: Resource("ServiceAccount", namespaced=True),
    ROLES: Resource("Role", namespaced=True),
    ROLEBINDINGS: Resource("RoleBinding", namespaced=True),
    "resource.k8s.io/v1/resourceclaims": Resource("ResourceClaim", namespaced=True, status_subresource=True),
    "resource.k8s.io/v1/resourceclaimtemplates": Resource("ResourceClaimTemplate", namespaced=True),
    "resource.nvidia.com/v1beta1/computedomains": Resource("ComputeDomain", namespaced=True, status_subresource=True),
    TOPOLOGY_BINDINGS: Resource("ClusterTopologyBinding", namespaced=False, status_subresource=True),
    LEASES: Resource("Lease", namespaced=True),
    PRIORITY_CLASSES: Resource("PriorityClass", namespaced=False),
    DISRUPTION_BUDGETS: Resource("PodDisruptionBudget", namespaced=True, status_subresource=True),
    EVENTS: Resource("Event", namespaced=True),
}

_CORE_PATH = re.compile(
    r"^/api/v1/(?:namespaces/(?P<ns>[^/]+)/)?(?P<plural>[a-z]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[a-z]+))?$"
)
_GROUP_PATH = re.compile(
    r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/(?:namespaces/(?P<ns>[^/]+)/)?(?P<plural>[a-z]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>[a-z]+))?$"
)


@dataclass(frozen=True)
class Target:
    """What a request path names: a collection (``name`` None), an object, or one of its subresources."""

    resource: str
    namespace: str
    name: str | None
    subresource: str | None


class StatusError(Exception):
    """A refusal, answered as kube-apiserver does: the HTTP ``code`` and a ``v1.Status`` body."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code, self.reason, self.message = code, reason, message

    def body(self) -> dict[str, Any]:
        return status_body(self.code, self.reason, self.message)


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}  # fmt: skip


def parse_path(path: str) -> Target:
    match = _CORE_PATH.match(path) or _GROUP_PATH.match(path)
    if match is None:
        raise StatusError(404, "NotFound", f"the server could not find the requested resource {path}")
    parts = match.groupdict()
    api_version = f"{parts['group']}/{parts['version']}" if parts.get("group") else CORE
    resource = f"{api_version}/{parts['plural']}"
    if resource not in RESOURCES:
        raise StatusError(404, "NotFound", f"the server could not find the requested resource {path}")
    return Target(resource, parts.get("ns") or "", parts.get("name"), parts.get("sub"))


def resource_for(obj: dict[str, Any]) -> str:
    """The resource key of a manifest, from its ``apiVersion`` and ``kind``."""
    for key, resource in RESOURCES.items():
        if resource.kind == obj.get("kind") and Resource.api_version(key) == obj.get("apiVersion"):
            return key
    raise KeyError(f"the fake API server serves no {obj.get('apiVersion')} {obj.get('kind')}")
