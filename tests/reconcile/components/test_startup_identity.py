"""Startup order (grove-initc and its identity: ServiceAccount, Role, RoleBinding), as Grove's controllers make
them, against the in-memory API."""

from __future__ import annotations

from typing import Any

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


def test_init_container_runs_as_the_pcs_service_account_with_read_only_pod_access() -> None:
    document = example("training-scaled")
    document["spec"]["replicas"] = 1
    api = _converged(document)
    (initc,) = _initc(api, "training-0-coordinator")
    assert initc["command"] == ["grove-extender", "initc"]
    assert initc["image"] == "grove-extender:0.1.0"
    assert initc["securityContext"]["runAsNonRoot"] and not initc["securityContext"]["allowPrivilegeEscalation"]
    assert not any(e["name"].startswith("GROVE_") for e in initc.get("env") or [])  # Grove adds env before it
    pod = next(
        p for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podclique"] == "training-0-coordinator"
    )
    assert pod["spec"]["serviceAccountName"] == "training"
    token = next(v for v in pod["spec"]["volumes"] if v["name"] == initc["volumeMounts"][0]["name"])
    assert token["projected"]["sources"][0]["serviceAccountToken"]["path"] == "token"
    (role,) = api.of_kind("Role")
    assert role["metadata"]["name"] == "grove.io:pcs:training"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    (binding,) = api.of_kind("RoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "grove.io:pcs:training",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "training", "namespace": NS}]
    (account,) = api.of_kind("ServiceAccount")
    assert account["metadata"]["name"] == "training" and account["automountServiceAccountToken"] is False


def test_a_pod_that_names_its_own_service_account_keeps_it_and_that_account_is_bound() -> None:
    document = example("training-scaled")
    document["spec"]["replicas"] = 1
    for clique in document["spec"]["template"]["cliques"]:
        clique["spec"]["podSpec"]["serviceAccountName"] = "trainer"
    api = _converged(document)
    pod = next(
        p for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podclique"] == "training-0-coordinator"
    )
    assert pod["spec"]["serviceAccountName"] == "trainer"
    (binding,) = api.of_kind("RoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "trainer", "namespace": NS}]
    assert not api.of_kind("ServiceAccount")  # the PodCliqueSet's own account is not needed


def test_no_startup_order_no_init_container_and_no_identity() -> None:
    api = _converged(example("multinode-aggregated"))
    assert not any(p["spec"].get("initContainers") for p in api.of_kind("Pod"))
    assert not api.of_kind("Role") and not api.of_kind("RoleBinding") and not api.of_kind("ServiceAccount")
