"""Startup order (grove-initc and its identity: ServiceAccount, Role, RoleBinding), as Grove's controllers make
them, against the in-memory API."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.reconcile.memory_client import InMemoryApi
from tests.reconcile.examples import cluster, example, reconciler

NS = "default"


def _converged(document: dict[str, Any]) -> InMemoryApi:
    api = cluster(document)
    reconciler(api).converge()
    return api


def _initc(api: InMemoryApi, clique: str) -> list[dict[str, Any]]:
    """The grove-initc containers of each pod of ``clique``."""
    pods = [p for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podclique"] == clique]
    assert pods, clique
    return [c for p in pods for c in p["spec"].get("initContainers") or [] if c["name"] == "grove-initc"]


def _args(api: InMemoryApi, clique: str) -> list[str] | None:
    containers = _initc(api, clique)
    return None if not containers else containers[0]["args"]


def test_explicit_startup_waits_for_base_gang_replicas_of_a_grouped_parent_and_not_in_scaled_gangs() -> None:
    # Grove's initcontainer.go / GenerateDependencyNamesForBasePodGang: a parent inside a scaling group counts
    # its base-gang replicas (minAvailable 1: replica 0); a scaled gang waits only inside its own group replica.
    document = example("training-scaled")
    document["spec"]["replicas"] = 1
    api = _converged(document)
    assert _args(api, "training-0-coordinator") == ["--podcliques=training-0-workers-0-parameter-server:1"]
    assert _args(api, "training-0-workers-0-worker") == ["--podcliques=training-0-coordinator:1"]
    assert _args(api, "training-0-workers-1-worker") is None  # coordinator is not in the group: no wait
    assert _args(api, "training-0-workers-0-parameter-server") is None
    clique = api.objects[("PodClique", NS, "training-0-workers-0-worker")]
    assert clique["spec"]["startsAfter"] == ["training-0-coordinator"]


def test_in_order_startup_waits_for_the_previous_clique() -> None:
    document = example("multinode-aggregated")  # leader, worker: one group of 2 replicas, minAvailable 1
    document["spec"]["template"]["cliqueStartupType"] = "CliqueStartupTypeInOrder"
    api = _converged(document)
    pcs = "multinode-aggregated-0-model-instance"
    assert _args(api, f"{pcs}-0-leader") is None  # first clique
    assert _args(api, f"{pcs}-0-worker") == [f"--podcliques={pcs}-0-leader:1"]  # base gang: group's base replicas
    assert _args(api, f"{pcs}-1-worker") == [f"--podcliques={pcs}-1-leader:1"]  # scaled: its own replica's leader


def _pod(api: InMemoryApi, clique: str) -> dict[str, Any]:
    return next(p for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podclique"] == clique)


def test_init_container_alone_gets_the_pcs_token_through_groves_volumes() -> None:
    # Grove's initcontainer.go (configurePodInitContainer) and pod_test.go
    # (TestAddServiceAccountTokenSecretVolumeUsesShortSecretName): the Secret <pcs>-ic-sat is mounted as volume
    # sa-token-secret-vol into grove-initc alone, at the in-cluster credentials path, beside pod-info-vol.
    document = example("training-scaled")
    document["spec"]["replicas"] = 1
    api = _converged(document)
    (initc,) = _initc(api, "training-0-coordinator")
    assert initc["command"] == ["grove-extender", "initc"]
    assert initc["image"] == "grove-extender:0.1.0"
    assert initc["securityContext"]["runAsNonRoot"] and not initc["securityContext"]["allowPrivilegeEscalation"]
    assert not any(e["name"].startswith("GROVE_") for e in initc.get("env") or [])  # Grove adds env before it
    assert initc["volumeMounts"] == [
        {"name": "pod-info-vol", "mountPath": "/var/grove/pod-info", "readOnly": True},
        {"name": "sa-token-secret-vol", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True},
    ]
    pod = _pod(api, "training-0-coordinator")
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["sa-token-secret-vol"]["secret"] == {"secretName": "training-ic-sat", "defaultMode": 420}
    assert [i["path"] for i in volumes["pod-info-vol"]["downwardAPI"]["items"]] == ["namespace", "podgangname"]
    for container in pod["spec"]["containers"]:  # the pod's own containers never see the init container's token
        assert not any(m["name"] == "sa-token-secret-vol" for m in container.get("volumeMounts") or [])
    (secret,) = api.of_kind("Secret")
    assert secret["metadata"]["name"] == "training-ic-sat"
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "training"}
    assert secret["metadata"]["ownerReferences"][0]["kind"] == "PodCliqueSet"


@pytest.mark.parametrize("own", [None, "trainer"], ids=["namespace-default", "named"])
def test_a_pod_with_a_startup_order_keeps_the_account_it_had(own: str | None) -> None:
    # Grove's pod.go copies the PodClique's podSpec and never sets serviceAccountName: the pod runs as its own account
    # (the namespace's default when it names none), so that account's imagePullSecrets still apply.
    document = example("training-scaled")
    document["spec"]["replicas"] = 1
    for clique in document["spec"]["template"]["cliques"]:
        if own is not None:
            clique["spec"]["podSpec"]["serviceAccountName"] = own
    api = _converged(document)
    pod = _pod(api, "training-0-coordinator")
    assert pod["spec"]["initContainers"][-1]["name"] == "grove-initc"
    assert pod["spec"].get("serviceAccountName") == own
    (binding,) = api.of_kind("RoleBinding")  # the pod's own account is granted nothing
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "training", "namespace": NS}]


def test_every_pcs_has_groves_service_account_role_and_role_binding() -> None:
    # Grove's components/registry.go registers ServiceAccount, Role and RoleBinding for every PodCliqueSet
    # (serviceaccount.go, role.go, rolebinding.go); no startup order here, so no pod mounts a token: no Secret.
    api = _converged(example("multinode-aggregated"))
    assert not any(p["spec"].get("initContainers") for p in api.of_kind("Pod"))
    (role,) = api.of_kind("Role")
    assert role["metadata"]["name"] == "grove.io:pcs:multinode-aggregated"
    assert role["metadata"]["labels"]["app.kubernetes.io/name"] == "grove.io-pcs-multinode-aggregated"
    assert role["metadata"]["labels"]["app.kubernetes.io/component"] == "pod-role"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["get", "list", "watch"]}
    ]
    (binding,) = api.of_kind("RoleBinding")
    assert binding["metadata"]["labels"]["app.kubernetes.io/component"] == "pod-role-binding"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "grove.io:pcs:multinode-aggregated",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "multinode-aggregated", "namespace": NS}]
    (account,) = api.of_kind("ServiceAccount")
    assert account["metadata"]["name"] == "multinode-aggregated"
    assert account["metadata"]["labels"]["app.kubernetes.io/component"] == "pod-service-account"
    assert not api.of_kind("Secret")


def test_the_token_secret_is_created_only_while_pods_that_mount_it_are_to_be_created() -> None:
    # The reconciler holds create but no read on Secrets: one create per pass that creates such pods, none after.
    document = example("training-scaled")
    document["spec"]["replicas"] = 1
    api = _converged(document)
    creates = [w for w in api.writes if w.kind == "Secret"]
    assert [w.verb for w in creates] == ["create"]
    before = len(api.writes)
    reconciler(api).converge()
    assert len(api.writes) == before
    pod = _pod(api, "training-0-coordinator")
    api.remove("Secret", namespace=NS, name="training-ic-sat")
    api.remove("Pod", namespace=NS, name=pod["metadata"]["name"])  # a pod to recreate: the Secret comes back with it
    reconciler(api).converge()
    assert [s["metadata"]["name"] for s in api.of_kind("Secret")] == ["training-ic-sat"]


def test_rbac_made_by_an_earlier_version_is_converged_to_groves() -> None:
    # Earlier versions bound the pods' own accounts and granted pods only; a pass makes both Grove's.
    document = example("training-scaled")
    document["spec"]["replicas"] = 1
    api = _converged(document)
    binding = api.objects[("RoleBinding", NS, "grove.io:pcs:training")]
    binding["subjects"].append({"kind": "ServiceAccount", "name": "default", "namespace": NS})
    api.objects[("Role", NS, "grove.io:pcs:training")]["rules"][0]["resources"] = ["pods"]
    reconciler(api).converge()
    assert api.objects[("RoleBinding", NS, "grove.io:pcs:training")]["subjects"] == [
        {"kind": "ServiceAccount", "name": "training", "namespace": NS}
    ]
    assert api.objects[("Role", NS, "grove.io:pcs:training")]["rules"][0]["resources"] == ["pods", "pods/status"]
