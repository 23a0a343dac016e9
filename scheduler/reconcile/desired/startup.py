"""Startup order: the ``grove-initc`` init container and the namespace-scoped identity it reads pods with.

As in Grove (``podclique/components/pod/initcontainer.go``), a pod whose PodClique has ``startsAfter`` parents gets
an init container named ``grove-initc`` with one ``--podcliques=<parentFQN>:<minAvailable>`` per parent; it exits
once every parent has that many Ready pods, so the pod's own containers start after their parents are up.

Identity, least privilege: the container runs ``grove-extender initc`` as the PodCliqueSet's ServiceAccount
``<pcs>``, bound by RoleBinding ``grove.io:pcs:<pcs>`` to Role ``grove.io:pcs:<pcs>`` (get/list/watch pods in the
namespace, nothing else). Its token comes from a projected volume mounted into the init container alone, so it
works even with ``automountServiceAccountToken: false``. Where Grove mints a long-lived token Secret for the
ServiceAccount, we give pods that need the init container ``serviceAccountName: <pcs>`` when their spec names none
(a pod that names its own account keeps it, and that account is bound to the Role too): the reconciler then never
needs to create Secrets, which would let it mint tokens for any ServiceAccount.
"""

from __future__ import annotations

from collections.abc import Iterable

from api.grove import PodCliqueSet
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.cliques import controller_reference, pcs_owner
from scheduler.reconcile.desired.names import (
    COMPONENT_POD_ROLE,
    COMPONENT_POD_ROLE_BINDING,
    COMPONENT_POD_SERVICE_ACCOUNT,
    LABEL_COMPONENT,
    LABEL_NAME,
    grove_labels,
    pod_role_name,
)
from scheduler.reconcile.desired.state import Desired

__all__ = [
    "INIT_CONTAINER",
    "add_init_container",
    "pod_role",
    "pod_role_binding",
    "pod_service_account",
    "service_account_of",
    "startup_accounts",
]

INIT_CONTAINER = "grove-initc"
_TOKEN_VOLUME = "grove-initc-token"
_TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
_TOKEN_SECONDS = 3600  # the kubelet refreshes it; the init container usually lives seconds


def service_account_of(pod_spec: KubeObject, pcs: str) -> str:
    """The ServiceAccount a pod with startup dependencies runs as: its own, else the PodCliqueSet's."""
    own = pod_spec.get("serviceAccountName") or pod_spec.get("serviceAccount")
    return str(own) if own and own != "default" else pcs


def startup_accounts(pcs: PodCliqueSet, desired: Desired) -> set[str]:
    """The ServiceAccounts the ``grove-initc`` containers of ``pcs`` run as; empty when no clique has a startup
    order (then no identity is needed, ever: ``startsAfter`` is immutable)."""
    return {
        service_account_of(clique.template.spec.podSpec, pcs.metadata.name)
        for gang in desired.gangs
        for clique in gang.cliques
        if clique.parents
    }


def add_init_container(spec: KubeObject, *, pcs: str, parents: Iterable[tuple[str, int]], image: str) -> None:
    """Append ``grove-initc`` (after the user's init containers, as Grove does) and its token volume to ``spec``."""
    spec["serviceAccountName"] = service_account_of(spec, pcs)
    spec.pop("serviceAccount", None)  # deprecated alias; one name is enough
    spec.setdefault("volumes", []).append(
        {
            "name": _TOKEN_VOLUME,
            "projected": {
                "defaultMode": 0o444,
                "sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": _TOKEN_SECONDS}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {
                        "downwardAPI": {
                            "items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]
                        }
                    },
                ],
            },
        }
    )
    spec.setdefault("initContainers", []).append(
        {
            "name": INIT_CONTAINER,
            "image": image,
            "command": ["grove-extender", "initc"],
            "args": [f"--podcliques={fqn}:{minimum}" for fqn, minimum in parents],
            "volumeMounts": [{"name": _TOKEN_VOLUME, "mountPath": _TOKEN_PATH, "readOnly": True}],
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "runAsNonRoot": True,
                "capabilities": {"drop": ["ALL"]},
                "seccompProfile": {"type": "RuntimeDefault"},
            },
        }
    )


def _metadata(pcs: PodCliqueSet, *, name: str, component: str) -> KubeObject:
    label_name = name.replace(":", "-")  # label values allow no ':'
    return {
        "name": name,
        "namespace": pcs.metadata.namespace,
        "labels": grove_labels(pcs.metadata.name, **{LABEL_NAME: label_name, LABEL_COMPONENT: component}),
        "ownerReferences": [controller_reference(pcs_owner(pcs))],
    }


def pod_service_account(pcs: PodCliqueSet) -> KubeObject:
    meta = _metadata(pcs, name=pcs.metadata.name, component=COMPONENT_POD_SERVICE_ACCOUNT)
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta, "automountServiceAccountToken": False}


def pod_role(pcs: PodCliqueSet) -> KubeObject:
    meta = _metadata(pcs, name=pod_role_name(pcs.metadata.name), component=COMPONENT_POD_ROLE)
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": rules}


def pod_role_binding(pcs: PodCliqueSet, accounts: Iterable[str]) -> KubeObject:
    name = pod_role_name(pcs.metadata.name)
    meta = _metadata(pcs, name=name, component=COMPONENT_POD_ROLE_BINDING)
    subjects = [
        {"kind": "ServiceAccount", "name": account, "namespace": pcs.metadata.namespace} for account in sorted(accounts)
    ]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": subjects,
    }
