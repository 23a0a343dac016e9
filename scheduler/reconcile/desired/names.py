"""Grove's object names and the labels every object made for a PodCliqueSet carries (reference §2–§3), in one place
so every builder agrees on them. Grove's own label keys (``grove.io/...``) are ``api.grove``'s."""

from __future__ import annotations

from api.grove import LABEL_COMPONENT, LABEL_MANAGED_BY, LABEL_NAME, LABEL_PART_OF, MANAGED_BY

__all__ = [
    "COMPONENT_COMPUTE_DOMAIN",
    "COMPONENT_HEADLESS_SERVICE",
    "COMPONENT_HPA",
    "COMPONENT_PCSG",
    "COMPONENT_PCSG_PODCLIQUE",
    "COMPONENT_PCS_PODCLIQUE",
    "COMPONENT_POD_ROLE",
    "COMPONENT_POD_ROLE_BINDING",
    "COMPONENT_POD_SA_TOKEN_SECRET",
    "COMPONENT_POD_SERVICE_ACCOUNT",
    "COMPONENT_RESOURCE_CLAIM",
    "LABEL_COMPONENT",
    "LABEL_MANAGED_BY",
    "LABEL_NAME",
    "LABEL_PART_OF",
    "MANAGED_BY",
    "base_gang_name",
    "clique_fqn",
    "compute_domain_name",
    "grove_labels",
    "initc_token_secret_name",
    "pcsg_fqn",
    "pod_role_name",
    "scaled_gang_name",
    "selector_string",
]

# Values of app.kubernetes.io/component, one per kind of object made for a PodCliqueSet (Grove's labels.go).
COMPONENT_HEADLESS_SERVICE = "pcs-headless-service"
COMPONENT_PCS_PODCLIQUE = "pcs-podclique"
COMPONENT_PCSG_PODCLIQUE = "pcsg-podclique"
COMPONENT_PCSG = "pcs-podcliquescalinggroup"
COMPONENT_HPA = "pcs-hpa"
COMPONENT_POD_ROLE = "pod-role"
COMPONENT_POD_ROLE_BINDING = "pod-role-binding"
COMPONENT_POD_SERVICE_ACCOUNT = "pod-service-account"
COMPONENT_POD_SA_TOKEN_SECRET = "pod-sa-token-secret"
COMPONENT_RESOURCE_CLAIM = "resource-claim"
COMPONENT_COMPUTE_DOMAIN = "pcs-computedomain"


def grove_labels(pcs: str, **extra: str) -> dict[str, str]:
    """``managed-by`` and ``part-of``, which every object made for a PodCliqueSet carries, plus ``extra``."""
    return {LABEL_MANAGED_BY: MANAGED_BY, LABEL_PART_OF: pcs, **extra}


def selector_string(labels: dict[str, str]) -> str:
    """A label selector as ``metav1.LabelSelectorAsSelector(...).String()`` prints it, terms sorted by key: what a
    scale subresource's ``labelSelectorPath`` must hold for an HPA."""
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def pod_role_name(pcs: str) -> str:
    """Role and RoleBinding that let the startup-order init container read pods: ``grove.io:pcs:<pcs>``."""
    return f"grove.io:pcs:{pcs}"


def initc_token_secret_name(pcs: str) -> str:
    """The Secret holding the init container's ServiceAccount token: ``<pcs>-ic-sat``."""
    return f"{pcs}-ic-sat"


def compute_domain_name(pcs: str, replica: int, group: str) -> str:
    """MNNVL ComputeDomain of a PodCliqueSet replica and group, and the ResourceClaimTemplate it makes:
    ``<pcs>-<r>-<group>``."""
    return f"{pcs}-{replica}-{group}"


def clique_fqn(pcs: str, replica: int, clique: str) -> str:
    """Standalone PodClique (also the PodGroup name): ``<pcs>-<r>-<clique>``."""
    return f"{pcs}-{replica}-{clique}"


def pcsg_fqn(pcs: str, replica: int, pcsg: str) -> str:
    """PodCliqueScalingGroup: ``<pcs>-<r>-<pcsg>``; its cliques are ``<pcsg-fqn>-<i>-<clique>``."""
    return f"{pcs}-{replica}-{pcsg}"


def base_gang_name(pcs: str, replica: int) -> str:
    """Base PodGang and headless Service of a PCS replica: ``<pcs>-<r>``."""
    return f"{pcs}-{replica}"


def scaled_gang_name(pcs: str, replica: int, pcsg: str, pcsg_replica: int, min_available: int) -> str:
    """Scaled PodGang of PCSG replica ``k ≥ minAvailable``: ``<pcs>-<r>-<pcsg>-<k−minAvailable>``."""
    return f"{pcs}-{replica}-{pcsg}-{pcsg_replica - min_available}"
