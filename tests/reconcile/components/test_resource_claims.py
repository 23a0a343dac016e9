"""DRA resource sharing at every level Grove has it, against the in-memory API. Mirrors Grove snapshot fcc3b3bb:
``internal/resourceclaim/naming.go`` (names), ``reconcile.go`` (``EnsureResourceClaim``, ``InjectResourceClaimRefs``,
``CleanupStalePerReplicaRCs``), ``resolve.go`` (internal templates before external ones), the ``resourceclaim``
components of the PodCliqueSet and PodClique controllers, the scaling-group controller's
``ensurePCSGResourceClaims``, and ``podclique/components/pod/pod.go`` (``injectAllResourceClaimRefs``)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.reconcile.memory_client import InMemoryApi
from scheduler.reconcile.rules.validation import validate
from tests.reconcile.examples import cluster, example, pcs_model, reconciler

NS = "default"
T = "spec.template"
REQUESTS = {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}


def _shared() -> dict[str, Any]:
    """training-scaled (2 replicas; coordinator alone; group workers = worker ×4 + parameter-server, 3 replicas),
    sharing claims at all three levels."""
    document = example("training-scaled")
    template = document["spec"]["template"]
    template["resourceClaimTemplates"] = [
        {"name": "gpu", "templateSpec": {"spec": REQUESTS}},
        {"name": "fabric", "templateSpec": {"metadata": {"labels": {"x": "y"}}, "spec": REQUESTS}},
    ]
    template["resourceSharing"] = [
        {"name": "fabric", "scope": "PerReplica"},
        {"name": "gpu", "scope": "AllReplicas", "filter": {"childScalingGroupNames": ["workers"]}},
    ]
    template["podCliqueScalingGroups"][0]["resourceSharing"] = [
        {"name": "gpu", "scope": "PerReplica", "filter": {"childCliqueNames": ["worker"]}}
    ]
    worker = next(c for c in template["cliques"] if c["name"] == "worker")
    worker["resourceSharing"] = [{"name": "gpu", "scope": "PerReplica"}]
    return document


def _converged(document: dict[str, Any], *extra: dict[str, Any]) -> InMemoryApi:
    api = cluster(*extra, document)
    reconciler(api).converge()
    return api


def _pod(api: InMemoryApi, clique: str, index: int) -> dict[str, Any]:
    return next(
        p
        for p in api.of_kind("Pod")
        if p["metadata"]["labels"]["grove.io/podclique"] == clique
        and p["metadata"]["labels"]["grove.io/podclique-pod-index"] == str(index)
    )


def _claims(pod: dict[str, Any]) -> list[str]:
    return [c["name"] for c in pod["spec"].get("resourceClaims") or []]


def test_claims_have_groves_names_owners_and_labels_at_each_level() -> None:
    api = _converged(_shared())
    claims = {c["metadata"]["name"]: c for c in api.of_kind("ResourceClaim")}
    # PodCliqueSet: 1 AllReplicas + 2 PerReplica; groups: 2 PCS replicas × 3 group replicas; PodCliques: 6 worker
    # PodCliques × 4 pod indices.
    assert len(claims) == 3 + 6 + 24
    whole = claims["training-all-gpu"]
    assert whole["apiVersion"] == "resource.k8s.io/v1"
    assert whole["spec"] == REQUESTS  # the template's spec; its metadata is not copied
    assert whole["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "grove-operator",
        "app.kubernetes.io/part-of": "training",
        "app.kubernetes.io/component": "resource-claim",
    }
    assert whole["metadata"]["ownerReferences"][0]["kind"] == "PodCliqueSet"
    assert claims["training-1-fabric"]["metadata"]["labels"]["grove.io/podcliqueset-replica-index"] == "1"
    group = claims["training-0-workers-2-gpu"]
    assert group["metadata"]["ownerReferences"][0]["name"] == "training-0-workers"
    assert group["metadata"]["labels"]["grove.io/podcliquescalinggroup"] == "training-0-workers"
    assert group["metadata"]["labels"]["grove.io/podcliquescalinggroup-replica-index"] == "2"
    clique = claims["training-1-workers-0-worker-3-gpu"]
    assert clique["metadata"]["ownerReferences"][0] | {"uid": ""} == {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "name": "training-1-workers-0-worker",
        "uid": "",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert clique["metadata"]["labels"]["grove.io/podclique"] == "training-1-workers-0-worker"
    assert clique["metadata"]["labels"]["grove.io/podclique-pod-index"] == "3"


def test_each_pod_references_its_claims_in_groves_order_in_every_container() -> None:
    api = _converged(_shared())
    worker = _pod(api, "training-0-workers-0-worker", 2)  # group replica 0: waits for the coordinator
    # PodCliqueSet (AllReplicas, then its replica's), the group replica's, the PodClique's for its pod index.
    expected = [
        "training-all-gpu",
        "training-0-fabric",
        "training-0-workers-0-gpu",
        "training-0-workers-0-worker-2-gpu",
    ]
    assert _claims(worker) == expected
    assert worker["spec"]["resourceClaims"][0] == {"name": "training-all-gpu", "resourceClaimName": "training-all-gpu"}
    for container in worker["spec"]["containers"]:
        assert [c["name"] for c in container["resources"]["claims"]] == expected
    initc = next(c for c in worker["spec"]["initContainers"] if c["name"] == "grove-initc")
    assert "claims" not in (initc.get("resources") or {})  # added after the claims, as in Grove
    assert _claims(_pod(api, "training-0-coordinator", 0)) == ["training-0-fabric"]  # filtered out of gpu
    assert _claims(_pod(api, "training-1-workers-0-parameter-server", 0)) == ["training-all-gpu", "training-1-fabric"]


def test_scale_in_deletes_the_claims_of_the_replicas_that_went() -> None:
    api = _converged(_shared())
    api.scale("PodClique", namespace=NS, name="training-0-workers-0-worker", replicas=2)
    document = _shared()
    document["spec"]["replicas"] = 1
    api.apply(document)
    reconciler(api).converge()
    names = {c["metadata"]["name"] for c in api.of_kind("ResourceClaim")}
    assert "training-1-fabric" not in names and "training-0-fabric" in names
    assert not any(name.startswith("training-1-workers") for name in names)  # gone with their owners
    assert {"training-0-workers-0-worker-0-gpu", "training-0-workers-0-worker-1-gpu"} <= names
    assert "training-0-workers-0-worker-2-gpu" not in names


def test_an_external_template_is_used_and_a_missing_one_refuses_naming_the_entry() -> None:
    document = example("multinode-aggregated")
    document["spec"]["template"]["resourceSharing"] = [
        {"name": "shared-gpu", "namespace": "infra", "scope": "AllReplicas"}
    ]
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "shared-gpu", "namespace": "infra"},
        "spec": {"spec": REQUESTS},
    }
    api = _converged(document, template)
    (claim,) = api.of_kind("ResourceClaim")
    assert claim["metadata"]["name"] == "multinode-aggregated-all-shared-gpu" and claim["spec"] == REQUESTS
    missing = cluster(document)
    outcome = reconciler(missing).reconcile(NS, "multinode-aggregated")
    assert outcome.errors == [
        f"{T}.resourceSharing[0].name: ResourceClaimTemplate infra/shared-gpu not found: it is neither in "
        "spec.template.resourceClaimTemplates nor in the cluster"
    ]
    assert not missing.of_kind("Pod")


def _errors(document: dict[str, Any]) -> list[str]:
    pcs = pcs_model(document)
    return [str(e) for e in validate(pcs, binding=None, creating=True, scheduler_names=frozenset({"grove"}))]


def _set(path: list[str | int], value: Any) -> Any:
    def mutate(document: dict[str, Any]) -> None:
        target: Any = document["spec"]["template"]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        pytest.param(
            _set(["resourceClaimTemplates", 0, "name"], ""),
            f"{T}.resourceClaimTemplates[0].name: Required value: template name is required",
            id="template-name",
        ),
        pytest.param(
            _set(["resourceClaimTemplates", 1, "templateSpec"], {"spec": {"devices": {}}}),
            f"{T}.resourceClaimTemplates[1].templateSpec.spec.devices.requests: Required value: at least one device "
            "request is required",
            id="template-requests",
        ),
        pytest.param(
            _set(["resourceClaimTemplates", 1, "name"], "gpu"),
            f'{T}.resourceClaimTemplates.name: Duplicate value: "gpu"',
            id="template-duplicate",
        ),
        pytest.param(
            _set(["resourceSharing", 0, "scope"], "Everywhere"),
            f'{T}.resourceSharing[0].scope: Unsupported value: "Everywhere": supported values: "AllReplicas", '
            '"PerReplica"',
            id="scope",
        ),
        pytest.param(
            _set(["resourceSharing", 1, "name"], "fabric"),
            f'{T}.resourceSharing[1].name: Duplicate value: "fabric"',
            id="sharing-duplicate",
        ),
        pytest.param(
            _set(["resourceSharing", 0, "namespace"], "infra"),
            f'{T}.resourceSharing[0].namespace: Invalid value: "infra": namespace must be empty when name matches an '
            "internal resourceClaimTemplate",
            id="namespace-of-internal",
        ),
        pytest.param(
            _set(["resourceSharing", 1, "filter"], {}),
            f"{T}.resourceSharing[1].filter: Required value: filter must specify at least one childCliqueNames or "
            "childScalingGroupNames entry",
            id="pcs-filter-empty",
        ),
        pytest.param(
            _set(["resourceSharing", 1, "filter"], {"childScalingGroupNames": ["nope"]}),
            f'{T}.resourceSharing[1].filter.childScalingGroupNames[0]: Not found: "nope"',
            id="pcs-filter-unknown-group",
        ),
        pytest.param(
            _set(["podCliqueScalingGroups", 0, "resourceSharing", 0, "filter"], {"childCliqueNames": ["coordinator"]}),
            f'{T}.podCliqueScalingGroups[0].resourceSharing[0].filter.childCliqueNames[0]: Not found: "coordinator"',
            id="pcsg-filter-not-a-member",
        ),
        pytest.param(
            _set(["cliques", 2, "resourceSharing", 0, "name"], ""),
            f"{T}.cliques[2].resourceSharing[0].name: Required value: reference name is required",
            id="clique-name",
        ),
    ],
)
def test_groves_resource_sharing_rules_and_messages(mutate: Any, error: str) -> None:
    # Grove's validation/podcliqueset.go validateResourceClaimTemplates, validatePCSResourceSharing,
    # validatePCSGResourceSharing, validateResourceSharingSpecs.
    document = _shared()
    assert _errors(document) == []
    mutate(document)
    assert _errors(document) == [error]
