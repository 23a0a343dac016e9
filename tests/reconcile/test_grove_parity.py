"""The divergences from Grove's own tests (issue 13), each fixed and held by a test named after the Grove test it
mirrors (Grove snapshot fcc3b3bb, operator/internal/...)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import client

from api.grove import ClusterTopologyBinding
from benchmarks.sim.fakeapi import running
from scheduler.kube.memory.resources import ROLES
from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.desired.services import service_object
from scheduler.reconcile.desired.state import desired_state
from scheduler.reconcile.memory_client import InMemoryApi
from scheduler.reconcile.rest_client import KubeApi
from scheduler.reconcile.rules.features import Features
from scheduler.reconcile.rules.topology import binding_errors
from scheduler.reconcile.rules.validation import validate
from tests.reconcile.examples import built_pod, cluster, example, pcs_model, reconciler
from tests.reconcile.settling import quiet, within

T = "spec.template"
BINDING = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "ClusterTopologyBinding",
    "metadata": {"name": "topo"},
    "spec": {"levels": [{"domain": d, "key": f"example.com/{d}"} for d in ("zone", "block", "rack", "host")]},
}


def _errors(document: dict[str, Any], binding: dict[str, Any] | None = BINDING) -> list[str]:
    model = ClusterTopologyBinding.model_validate(binding) if binding else None
    pcs = pcs_model(document)
    return [str(e) for e in validate(pcs, binding=model, creating=True, scheduler_names=frozenset({"grove"}))]


# --- webhook/admission/pcs/validation/podcliqueset_test.go: TestValidateTopologyConstraintsPCSTopologyName ------


def test_create_allows_child_only_explicit_topology_constraint() -> None:
    # "create allows child-only explicit topology constraint": topologyName on a clique, none on the PCS.
    document = example("multinode-aggregated")
    document["spec"]["template"]["cliques"][1]["topologyConstraint"] = {
        "topologyName": "topo",
        "pack": {"required": "rack"},
    }
    assert _errors(document) == []
    api = cluster(BINDING, document)
    reconciler(api).converge()
    gangs = {g["metadata"]["name"]: g for g in api.of_kind("PodGang")}
    worker = next(g for g in gangs["multinode-aggregated-0"]["spec"]["podgroups"] if g["name"].endswith("-worker"))
    assert worker["topologyConstraint"] == {"packConstraint": {"required": "example.com/rack"}}
    assert gangs["multinode-aggregated-0"]["metadata"]["annotations"]["grove.io/topology-name"] == "topo"


def test_child_only_group_constraint_is_inherited_by_its_cliques_and_a_missing_name_is_named_where_it_is() -> None:
    # Same Grove test: a group's name is inherited by its cliques; a constraint with no name to inherit is refused
    # at its own path ("topologyName is required when topologyConstraint is set and cannot be inherited").
    document = example("multinode-aggregated")
    template = document["spec"]["template"]
    template["podCliqueScalingGroups"][0]["topologyConstraint"] = {
        "topologyName": "topo",
        "pack": {"required": "block"},
    }
    template["cliques"][1]["topologyConstraint"] = {"pack": {"required": "rack"}}  # inherits "topo" from its group
    assert _errors(document) == []
    template["podCliqueScalingGroups"][0]["topologyConstraint"] = {"pack": {"required": "block"}}
    assert _errors(document) == [
        f"{T}.podCliqueScalingGroups[0].topologyConstraint.topologyName: is required when topologyConstraint is set "
        "and cannot be inherited",
        f"{T}.cliques[1].topologyConstraint.topologyName: is required when topologyConstraint is set and cannot be "
        "inherited",
    ]


# --- controller/podclique/components/pod/pod_test.go: TestAddGroveEnvironmentVariables_NoDuplicates ---------------


def test_grove_env_is_prepended_to_containers_and_init_containers_in_groves_order() -> None:
    document = example("multinode-disaggregated")
    spec = document["spec"]["template"]["cliques"][1]["spec"]["podSpec"]  # pworker, in scaling group prefill
    spec["containers"][0]["env"] = [
        {"name": "MY_NAME", "value": "$(GROVE_PCLQ_NAME)"},
        {"name": "GROVE_PCS_NAME", "value": "x"},
    ]
    spec["initContainers"] = [{"name": "setup", "image": "busybox", "env": [{"name": "A", "value": "1"}]}]
    pcs = pcs_model(document)
    clique = desired_state(pcs, None).gangs[0].cliques[1]
    pod = built_pod(pcs, clique, index=0, name="p")
    grove = [
        "GROVE_PCS_NAME",
        "GROVE_PCS_INDEX",
        "GROVE_PCLQ_NAME",
        "GROVE_HEADLESS_SERVICE",
        "GROVE_PCLQ_POD_INDEX",
        "GROVE_PCSG_NAME",
        "GROVE_PCSG_TEMPLATE_NUM_PODS",
        "GROVE_PCSG_INDEX",
    ]
    # Prepended, so MY_NAME can refer to $(GROVE_PCLQ_NAME) (Kubernetes expands only earlier entries); the user's
    # GROVE_PCS_NAME is replaced, not duplicated.
    assert [e["name"] for e in pod["spec"]["containers"][0]["env"]] == [*grove, "MY_NAME"]
    assert [e["name"] for e in pod["spec"]["initContainers"][0]["env"]] == [*grove, "A"]
    assert pod["spec"]["containers"][0]["env"][0]["value"] == "multinode-disaggregated"


# --- webhook/admission/pcs/validation/podcliqueset_test.go: TestValidateSchedulerNames ---------------------------


SAME = f"{T}.cliques.spec.podSpec.schedulerName: the schedulerName for all pods have to be the same"


@pytest.mark.parametrize(
    ("default", "names", "errors"),
    [
        pytest.param("default-scheduler", ["", ""], [], id="all empty with default default-scheduler"),
        pytest.param("grove", ["", ""], [], id="all empty with default grove (kai default)"),
        pytest.param("default-scheduler", ["default-scheduler"] * 2, [], id="all same default-scheduler"),
        pytest.param("default-scheduler", ["", "default-scheduler"], [], id="mixed empty and default-scheduler"),
        # The regression: an empty name beside the reconciler's own, which is its default backend.
        pytest.param("grove", ["", "grove"], [], id="mixed empty and the default backend"),
        pytest.param("grove", ["grove", "grove"], [], id="single enabled scheduler (the reconciler's)"),
        pytest.param("default-scheduler", ["", "grove"], [SAME], id="mixed empty and another enabled scheduler"),
        pytest.param("grove", ["", "default-scheduler"], [SAME], id="mixed empty and default-scheduler, grove default"),
        pytest.param(
            "default-scheduler",
            ["default-scheduler", "kai-scheduler"],
            [f"{T}.cliques[1].spec.podSpec.schedulerName", SAME],
            id="mixed default-scheduler and kai-scheduler",
        ),
        pytest.param(
            "grove", ["volcano", "volcano"], [f"{T}.cliques[0]", f"{T}.cliques[1]"], id="unknown scheduler not enabled"
        ),
    ],
)
def test_validate_scheduler_names(default: str, names: list[str], errors: list[str]) -> None:
    # Grove's validateSchedulerNames resolves an empty name to the configured default profile before comparing.
    document = example("multinode-aggregated")
    for clique, name in zip(document["spec"]["template"]["cliques"], names, strict=True):
        clique["spec"]["podSpec"]["schedulerName"] = name
    pcs = pcs_model(document)
    found = [
        str(e)
        for e in validate(
            pcs, binding=None, creating=True, scheduler_names=frozenset({"grove"}), default_scheduler=default
        )
        if "scheduler" in str(e)
    ]
    assert len(found) == len(errors) and all(e.startswith(prefix) for e, prefix in zip(found, errors, strict=True))


def test_the_reconcilers_default_profile_is_its_own_scheduler_unless_configured() -> None:
    document = example("multinode-aggregated")
    document["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["schedulerName"] = ""  # the other says grove
    api = cluster(document)
    reconciler(api).converge()
    assert {p["spec"]["schedulerName"] for p in api.of_kind("Pod")} == {"grove"}
    api = cluster(document)
    outcome = Reconciler(api, features=Features(default_scheduler="default-scheduler")).reconcile(
        "default", "multinode-aggregated"
    )
    assert outcome.errors == [f"{SAME} (got default-scheduler, grove)"]


def test_pods_of_a_default_scheduler_template_are_routed_to_the_gang_scheduler() -> None:
    document = example("multinode-aggregated")
    for clique in document["spec"]["template"]["cliques"]:
        clique["spec"]["podSpec"]["schedulerName"] = "default-scheduler"
    api = cluster(document)
    reconciler(api).converge()
    assert {p["spec"]["schedulerName"] for p in api.of_kind("Pod")} == {"grove"}


# --- controller/podcliqueset/components/service/service_test.go: TestSync ---------------------------------------


def test_headless_service_labels_and_selector_are_groves() -> None:
    service = service_object(pcs_model(example("multinode-aggregated")), 1)
    assert service["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "grove-operator",
        "app.kubernetes.io/part-of": "multinode-aggregated",
        "app.kubernetes.io/name": "multinode-aggregated-1",
        "app.kubernetes.io/component": "pcs-headless-service",
        "grove.io/podcliqueset-replica-index": "1",
    }
    assert service["spec"]["selector"] == {
        "app.kubernetes.io/managed-by": "grove-operator",
        "app.kubernetes.io/part-of": "multinode-aggregated",
        "grove.io/podcliqueset-replica-index": "1",
    }


def test_a_service_made_by_an_earlier_version_gets_groves_selector() -> None:
    api = cluster(example("multinode-aggregated"))
    reconciler(api).converge()
    service = api.objects[("Service", "default", "multinode-aggregated-0")]
    del service["spec"]["selector"]["app.kubernetes.io/managed-by"]  # as the reconciler used to write it
    reconciler(api).converge()
    assert (
        api.objects[("Service", "default", "multinode-aggregated-0")]["spec"]["selector"][
            "app.kubernetes.io/managed-by"
        ]
        == "grove-operator"
    )


# --- webhook/admission/pcs/defaulting/podcliqueset_additional_test.go: TestDefaultPodCliqueTemplateSpecs ---------


def test_replicas_zero_without_min_available_is_refused_at_min_available() -> None:
    # Grove's defaulting turns replicas 0 into 1 but defaults minAvailable from the 0 written: refused there.
    document = example("multinode-aggregated")
    document["spec"]["template"]["cliques"][0]["spec"]["replicas"] = 0
    assert _errors(document) == [f"{T}.cliques[0].spec.minAvailable: must be > 0 (got 0)"]


# --- webhook/admission/clustertopology/validation/validation_test.go: TestValidateCreate ----------------------


@pytest.mark.parametrize(
    ("levels", "problems"),
    [
        pytest.param(
            [("zone", "topology.kubernetes.io/zone"), ("host", "kubernetes.io/hostname")], [], id="valid unique levels"
        ),
        pytest.param(
            [("zone", "topology.kubernetes.io/zone"), ("zone", "kubernetes.io/hostname")],
            ["spec.levels[1].domain: duplicate domain 'zone'"],
            id="duplicate domain",
        ),
        pytest.param(
            [("region", "topology.kubernetes.io/zone"), ("zone", "topology.kubernetes.io/zone")],
            ["spec.levels[1].key: duplicate key 'topology.kubernetes.io/zone'"],
            id="duplicate key",
        ),
    ],
)
def test_cluster_topology_binding_levels(levels: list[tuple[str, str]], problems: list[str]) -> None:
    binding = {**BINDING, "spec": {"levels": [{"domain": d, "key": k} for d, k in levels]}}
    assert binding_errors(ClusterTopologyBinding.model_validate(binding)) == problems
    document = example("multinode-aggregated")
    document["spec"]["template"]["topologyConstraint"] = {"topologyName": "topo", "pack": {"required": "zone"}}
    refused = [e for e in _errors(document, binding) if "is invalid" in e]
    assert bool(refused) == bool(problems)


# --- webhook/admission/pcs/validation/podcliqueset_test.go: TestPodCliqueScalingGroupConfigValidation ----------


def test_negative_group_replicas_names_replicas_and_min_available() -> None:
    # "Invalid Replicas (negative value)": replicas -1, minAvailable 1 ⇒ errors on both fields.
    document = example("multinode-aggregated")
    document["spec"]["template"]["podCliqueScalingGroups"][0].update(replicas=-1, minAvailable=1)
    paths = [e.split(":")[0] for e in _errors(document)]
    assert paths == [f"{T}.podCliqueScalingGroups[0].replicas", f"{T}.podCliqueScalingGroups[0].minAvailable"]


# --- controller/podcliqueset/register.go: podCliqueSetPredicate (grove.io/reconcile-trigger) ---------------------


def test_reconcile_trigger_runs_one_pass_that_writes_nothing_when_nothing_changed() -> None:
    # Grove reconciles on a spec change or a change of this annotation; a no-op pass writes nothing, and the
    # annotation (grove.io/ prefixed) is not mirrored onto the PodGangs, so a trigger never rewrites them.
    document = example("multinode-aggregated")
    api = cluster(document)
    reconciler(api).converge()
    before = len(api.writes)
    document["metadata"]["annotations"] = {"grove.io/reconcile-trigger": "bench-1"}
    api.apply(document)
    assert reconciler(api).converge() == 1  # one pass, on the trigger
    assert len(api.writes) == before
    assert not any(
        "grove.io/reconcile-trigger" in (g["metadata"].get("annotations") or {}) for g in api.of_kind("PodGang")
    )


def test_a_deleted_child_is_made_again_without_a_trigger() -> None:
    # Grove's operator does not watch the init container's Role; its e2e bumps grove.io/reconcile-trigger to bring
    # one back. The reconciler reads every child from its informers, so it watches them all: the Role is back at
    # once, and the trigger (a change to the PodCliqueSet like any other) is not needed.
    with running() as server:
        api = KubeApi(client.ApiClient(client.Configuration(host=server.url)), timeout=10.0)
        stop = threading.Event()
        threads = api.start_watches(stop)
        loop = threading.Thread(
            target=Reconciler(api).run, kwargs={"stop": stop, "poll_seconds": 0.1, "resync_seconds": 600}, daemon=True
        )
        loop.start()
        try:
            server.apply(example("multinode-aggregated"))
            role = "grove.io:pcs:multinode-aggregated"
            within(10, lambda: server.get(ROLES, role, "default") is not None)
            quiet(server)  # the reconciler's own status writes have settled: no pass is pending
            first = server.get(ROLES, role, "default")
            server.delete(ROLES, role, "default")
            remade = lambda: (server.get(ROLES, role, "default") or first)["metadata"]["uid"]  # noqa: E731
            within(5, lambda: remade() != first["metadata"]["uid"])
        finally:
            stop.set()
            for thread in [loop, *threads]:
                thread.join(timeout=60)


# --- webhook/admission/pcs/authorization/handler.go (grove.io/disable-managed-resource-protection) ---------------


def test_disable_managed_resource_protection_is_accepted_and_changes_nothing_here() -> None:
    # Grove's authorizer webhook (off by default, config.authorizer.enabled) refuses edits of managed objects by
    # anyone but the operator unless the PodCliqueSet has this annotation "true". The reconciler ships no such
    # webhook (as Grove's default), so there is nothing to disable: the annotation is read as Grove's default
    # reads it — accepted, not mirrored onto PodGangs, every object the same.
    plain = example("multinode-aggregated")
    api = cluster(plain)
    reconciler(api).converge()
    marked = example("multinode-aggregated")
    marked["metadata"]["annotations"] = {"grove.io/disable-managed-resource-protection": "true"}
    other = cluster(marked)
    assert reconciler(other).reconcile("default", "multinode-aggregated").valid
    reconciler(other).converge()

    def shapes(api: InMemoryApi) -> list[tuple[str, str, Any]]:
        return sorted((o["kind"], o["metadata"]["name"], o["metadata"].get("annotations")) for o in api.created)

    assert shapes(other) == shapes(api)
