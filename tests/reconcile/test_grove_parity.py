"""The divergences from Grove's own tests (issue 13), each fixed and held by a test named after the Grove test it
mirrors (Grove snapshot fcc3b3bb, operator/internal/...)."""

from __future__ import annotations

from typing import Any

import pytest

from api.grove import ClusterTopologyBinding
from scheduler.reconcile.desired.services import service_object
from scheduler.reconcile.desired.state import desired_state
from scheduler.reconcile.rules.topology import binding_errors
from scheduler.reconcile.rules.validation import validate
from tests.reconcile.examples import built_pod, cluster, example, pcs_model, reconciler

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


@pytest.mark.parametrize(
    ("names", "errors"),
    [
        pytest.param(["", ""], [], id="all empty with default default-scheduler"),
        pytest.param(["default-scheduler", "default-scheduler"], [], id="all same default-scheduler"),
        pytest.param(["", "default-scheduler"], [], id="mixed empty and default-scheduler"),
        pytest.param(["grove", "grove"], [], id="single enabled scheduler (the reconciler's)"),
        pytest.param(
            ["default-scheduler", "kai-scheduler"],
            [f"{T}.cliques[1].spec.podSpec.schedulerName", f"{T}.cliques:"],
            id="mixed default-scheduler and kai-scheduler",
        ),
        pytest.param(["", "grove"], [f"{T}.cliques:"], id="mixed empty and another enabled scheduler"),
        pytest.param(
            ["volcano", "volcano"], [f"{T}.cliques[0]", f"{T}.cliques[1]"], id="unknown scheduler not enabled"
        ),
    ],
)
def test_validate_scheduler_names(names: list[str], errors: list[str]) -> None:
    document = example("multinode-aggregated")
    for clique, name in zip(document["spec"]["template"]["cliques"], names, strict=True):
        clique["spec"]["podSpec"]["schedulerName"] = name
    found = [e for e in _errors(document) if "scheduler" in e]
    assert len(found) == len(errors) and all(e.startswith(prefix) for e, prefix in zip(found, errors, strict=True))


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
