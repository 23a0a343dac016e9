"""Startup order: the ``grove-initc`` init container and the namespace-scoped identity it reads pods with.

As in Grove (``podclique/components/pod/initcontainer.go``), a pod whose PodClique has ``startsAfter`` parents gets
an init container named ``grove-initc`` with one ``--podcliques=<parentFQN>:<minAvailable>`` per parent; it exits
once every parent has that many Ready pods, so the pod's own containers start after their parents are up.

Identity, as Grove's PodCliqueSet components make it (``serviceaccount``, ``role``, ``rolebinding``,
``satokensecret``): every PodCliqueSet has a ServiceAccount ``<pcs>``, bound by RoleBinding ``grove.io:pcs:<pcs>``
to Role ``grove.io:pcs:<pcs>`` (get/list/watch pods and pods/status in the namespace, nothing else), and a token
Secret ``<pcs>-ic-sat`` for that account (type ``kubernetes.io/service-account-token``: Kubernetes' token
controller fills it in). The pod keeps its own account, named or the namespace's ``default`` — and with it that
account's ``imagePullSecrets`` and its token for the pod's own containers; only ``grove-initc`` mounts the Secret,
volume ``sa-token-secret-vol``, at the path a client looks for in-cluster credentials, beside ``pod-info-vol``
(the pod's namespace and PodGang, from the downward API).

Ours, not Grove's: the reconciler may create Secrets but never read them (least privilege: reading would let it
see every Secret in the cluster), so it creates the token Secret when it is about to create a pod that mounts it
and takes ``AlreadyExists`` as done (``components.sa_token_secret``); Grove reads it back and waits for the token
before creating anything. The ServiceAccount keeps ``automountServiceAccountToken: false``: no pod runs as it.
"""

from __future__ import annotations

from collections.abc import Iterable

from api.grove import LABEL_PODGANG, PodCliqueSet
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.cliques import controller_reference, pcs_owner
from scheduler.reconcile.desired.names import (
    COMPONENT_POD_ROLE,
    COMPONENT_POD_ROLE_BINDING,
    COMPONENT_POD_SA_TOKEN_SECRET,
    COMPONENT_POD_SERVICE_ACCOUNT,
    LABEL_COMPONENT,
    LABEL_NAME,
    grove_labels,
    initc_token_secret_name,
    pod_role_name,
)

__all__ = [
    "INIT_CONTAINER",
    "POD_INFO_VOLUME",
    "TOKEN_SECRET_VOLUME",
    "add_init_container",
    "pod_role",
    "pod_role_binding",
    "pod_service_account",
    "token_secret",
]

INIT_CONTAINER = "grove-initc"
TOKEN_SECRET_VOLUME = "sa-token-secret-vol"  # Grove's volume names
POD_INFO_VOLUME = "pod-info-vol"
_TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"  # where in-cluster clients look for token and CA
_POD_INFO_PATH = "/var/grove/pod-info"
_SECRET_MODE = 0o644  # Grove's 420: readable by the non-root user the container runs as


def add_init_container(spec: KubeObject, *, pcs: str, parents: Iterable[tuple[str, int]], image: str) -> None:
    """Append ``grove-initc`` (after the user's init containers, as Grove does) and its two volumes to ``spec``;
    the pod's ServiceAccount is left as it is."""
    spec.setdefault("volumes", []).extend(
        [
            {
                "name": TOKEN_SECRET_VOLUME,
                "secret": {"secretName": initc_token_secret_name(pcs), "defaultMode": _SECRET_MODE},
            },
            {
                "name": POD_INFO_VOLUME,
                "downwardAPI": {
                    "items": [
                        {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}},
                        {"path": "podgangname", "fieldRef": {"fieldPath": f"metadata.labels['{LABEL_PODGANG}']"}},
                    ]
                },
            },
        ]
    )
    spec.setdefault("initContainers", []).append(
        {
            "name": INIT_CONTAINER,
            "image": image,
            "command": ["grove-extender", "initc"],
            "args": [f"--podcliques={fqn}:{minimum}" for fqn, minimum in parents],
            "volumeMounts": [
                {"name": POD_INFO_VOLUME, "mountPath": _POD_INFO_PATH, "readOnly": True},
                {"name": TOKEN_SECRET_VOLUME, "mountPath": _TOKEN_PATH, "readOnly": True},
            ],
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
    rules = [{"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["get", "list", "watch"]}]
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": rules}


def pod_role_binding(pcs: PodCliqueSet) -> KubeObject:
    name = pod_role_name(pcs.metadata.name)
    meta = _metadata(pcs, name=name, component=COMPONENT_POD_ROLE_BINDING)
    subject = {"kind": "ServiceAccount", "name": pcs.metadata.name, "namespace": pcs.metadata.namespace}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [subject],
    }


def token_secret(pcs: PodCliqueSet) -> KubeObject:
    """The long-lived token of the ServiceAccount ``<pcs>``, which Kubernetes' token controller writes into it."""
    name = initc_token_secret_name(pcs.metadata.name)
    meta = _metadata(pcs, name=name, component=COMPONENT_POD_SA_TOKEN_SECRET)
    meta["annotations"] = {"kubernetes.io/service-account.name": pcs.metadata.name}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "kubernetes.io/service-account-token"}
