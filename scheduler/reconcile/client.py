"""The Kubernetes operations the reconciler needs, as one small interface.

Two implementations: ``memory_client.InMemoryApi`` (tests, ``--dry-run``) and ``rest_client.KubeApi`` (the official
client's ``ApiClient``, talking REST). Objects cross it as plain dicts exactly as the API server serves them, so nothing
a user put in a pod spec or another controller put on a PodGang is dropped on the way through.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

__all__ = [
    "ApiError",
    "Conflict",
    "KubeObject",
    "NotFound",
    "ObjectKey",
    "OwnedKind",
    "ReconcileApi",
    "ReplacedKind",
    "StatusKind",
]

KubeObject = dict[str, Any]
ObjectKey = tuple[str, str]  # (namespace, name) of a PodCliqueSet
OwnedKind = Literal[
    "Pod",
    "PodGang",
    "Service",
    "PodClique",
    "PodCliqueScalingGroup",
    "HorizontalPodAutoscaler",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ResourceClaim",
    "ComputeDomain",
]
StatusKind = Literal["PodGang", "PodClique", "PodCliqueScalingGroup"]
ReplacedKind = Literal[
    "PodGang",
    "PodClique",
    "PodCliqueScalingGroup",
    "HorizontalPodAutoscaler",
    "Service",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ResourceClaim",
    "ComputeDomain",
]


class ApiError(Exception):
    """A request the API server refused; ``status`` is its HTTP status, the message its ``Status.message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class NotFound(ApiError):
    """404: the object is gone."""


class Conflict(ApiError):
    """409: the name is taken (AlreadyExists) or our ``resourceVersion`` is stale; re-read and retry."""


class ReconcileApi(Protocol):
    """What the reconciler reads and writes. Every method is one API request (or one cached read).

    Reads of a missing object return ``None``; writes raise ``NotFound``, ``Conflict`` or ``ApiError``.
    ``delete`` of an object that is already gone succeeds (deletion is the goal either way). Writes that carry a
    ``resource_version`` must fail with ``Conflict`` when the object changed since it was read: that is what keeps
    two reconcilers, or the reconciler and the extender's status writer, from overwriting each other.
    """

    def list_podcliquesets(self) -> list[KubeObject]:
        """Every PodCliqueSet in every namespace the reconciler watches."""
        ...

    def get_podcliqueset(self, namespace: str, name: str) -> KubeObject | None: ...

    def patch_podcliqueset_status(self, namespace: str, name: str, *, status: KubeObject) -> None:
        """Merge-patch the ``status`` subresource (the reconciler owns PodCliqueSet status entirely)."""
        ...

    def get_topology_binding(self, name: str) -> KubeObject | None:
        """The cluster-scoped ``ClusterTopologyBinding`` named ``name``."""
        ...

    def get_resource_claim_template(self, namespace: str, name: str) -> KubeObject | None:
        """The ``resource.k8s.io`` ResourceClaimTemplate a ``resourceSharing`` entry names, if it exists."""
        ...

    def list_owned(self, kind: OwnedKind, *, namespace: str, part_of: str) -> list[KubeObject]:
        """Objects of ``kind`` in ``namespace`` labelled ``app.kubernetes.io/part-of=<part_of>``."""
        ...

    def create(self, obj: KubeObject) -> KubeObject:
        """Create ``obj`` (kind and namespace from the object itself); returns the stored object."""
        ...

    def replace(self, obj: KubeObject) -> KubeObject:
        """PUT an object of a ``ReplacedKind`` (its ``metadata.resourceVersion`` is the precondition, so a
        PodClique scaled by a user or an HPA since we read it is a ``Conflict``, never overwritten); status is not
        touched."""
        ...

    def patch_status(
        self, kind: StatusKind, *, namespace: str, name: str, status: KubeObject, resource_version: str
    ) -> KubeObject:
        """Merge-patch the object's ``status`` subresource, conditional on ``resource_version``."""
        ...

    def set_pod_scheduling_gates(
        self, namespace: str, name: str, *, gates: list[KubeObject], resource_version: str | None
    ) -> None:
        """Replace ``spec.schedulingGates`` (Kubernetes only lets gates be removed), on ``resource_version``; None
        only when ``gates`` is empty, which cannot undo anyone else's removal (a status write meanwhile then does not
        make the lift a conflict)."""
        ...

    def delete(self, kind: OwnedKind, *, namespace: str, name: str) -> None: ...

    def record_event(
        self,
        *,
        involved: KubeObject,
        reason: str,
        message: str,
        type: Literal["Normal", "Warning"],
    ) -> None:
        """Post a core/v1 Event about ``involved`` (an object reference: apiVersion, kind, namespace, name, uid)."""
        ...

    def changes(self, timeout: float) -> set[ObjectKey]:
        """Block up to ``timeout`` seconds for changes to PodCliqueSets, PodCliques, PodCliqueScalingGroups,
        PodGangs or Grove pods and return the PodCliqueSets they concern (by the objects' name or ``part-of``
        label). Empty when nothing changed."""
        ...
