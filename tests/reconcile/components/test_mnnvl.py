"""MNNVL as Grove's ``mnnvl`` feature, against the in-memory API. Mirrors Grove snapshot fcc3b3bb:
``operator/internal/mnnvl/webhook.go`` (create and update rules, their messages), ``helpers.go``
(``ResolveGroupNameHierarchically``, ``HasGPUInPodSpec``), ``injection.go`` (``InjectMNNVLIntoPodSpec``),
``computedomain/computedomain.go`` (names, labels, finalizer, spec, deletion) and the e2e cases of
``e2e/tests/auto-mnnvl`` (opt-out, CPU clique ignored, scale-in, invalid and immutable annotation)."""

from __future__ import annotations

import random
from typing import Any

from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.memory_client import InMemoryApi
from scheduler.reconcile.rules.features import Features
from tests.reconcile.examples import cluster, example

NS = "default"
GROUP = "grove.io/mnnvl-group"
ON = Features(mnnvl=True)


def _training(**annotations: str) -> dict[str, Any]:
    """training-scaled: GPU workers (in group ``workers``, beside a CPU parameter-server), a CPU coordinator."""
    document = example("training-scaled")
    document["metadata"]["annotations"] = dict(annotations)
    return document


def _run(document: dict[str, Any], features: Features = ON) -> tuple[InMemoryApi, Reconciler]:
    api = cluster(document)
    reconciler = Reconciler(api, rng=random.Random(1), features=features)
    reconciler.converge()
    return api, reconciler


def _pod_spec(api: InMemoryApi, clique: str) -> dict[str, Any]:
    spec: dict[str, Any] = api.objects[("PodClique", NS, clique)]["spec"]["podSpec"]
    return spec


def test_with_the_feature_off_a_group_is_refused_with_groves_message_and_none_is_allowed() -> None:
    api, reconciler = _run(_training(**{GROUP: "nvl"}), Features())
    outcome = reconciler.reconcile(NS, "training")
    assert outcome.errors == [
        'metadata.annotations.grove.io/mnnvl-group: Invalid value: "nvl": MNNVL is not enabled in the operator '
        "configuration. Either enable MNNVL globally or remove the grove.io/mnnvl-group annotation"
    ]
    assert not api.of_kind("PodClique")
    api, reconciler = _run(_training(**{GROUP: "none"}), Features())
    assert reconciler.reconcile(NS, "training").valid and not api.of_kind("ComputeDomain")


def test_a_value_that_is_no_dns_label_is_refused_even_when_on() -> None:
    document = _training()
    document["spec"]["template"]["cliques"][2]["annotations"] = {GROUP: "NVL_72"}
    _, reconciler = _run(document)
    (error,) = reconciler.reconcile(NS, "training").errors
    assert error.startswith(
        'spec.template.cliques[2].annotations.grove.io/mnnvl-group: Invalid value: "NVL_72": mnnvl-group value '
        '"NVL_72" is not a valid DNS-1123 label'
    )


def test_gpu_cliques_claim_from_their_replicas_compute_domain_and_cpu_cliques_are_left_alone() -> None:
    api, _ = _run(_training(**{GROUP: "nvl"}))
    worker = _pod_spec(api, "training-1-workers-0-worker")
    assert worker["resourceClaims"] == [{"name": "mnnvl-claim", "resourceClaimTemplateName": "training-1-nvl"}]
    assert worker["containers"][0]["resources"]["claims"] == [{"name": "mnnvl-claim"}]
    for cpu in ("training-1-workers-0-parameter-server", "training-1-coordinator"):  # e2e "CPU PCLQ ignored"
        assert "resourceClaims" not in _pod_spec(api, cpu)
    pod = next(p for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podclique"].endswith("0-worker"))
    assert pod["spec"]["resourceClaims"][0]["name"] == "mnnvl-claim"
    assert api.objects[("PodCliqueScalingGroup", NS, "training-0-workers")]["metadata"]["annotations"] == {GROUP: "nvl"}
    domains = {d["metadata"]["name"]: d for d in api.of_kind("ComputeDomain")}
    assert sorted(domains) == ["training-0-nvl", "training-1-nvl"]
    domain = domains["training-1-nvl"]
    assert domain["apiVersion"] == "resource.nvidia.com/v1beta1"
    assert domain["spec"] == {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "training-1-nvl"}}}
    assert domain["metadata"]["finalizers"] == ["grove.io/computedomain-finalizer"]
    assert domain["metadata"]["ownerReferences"][0]["kind"] == "PodCliqueSet"
    assert domain["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "grove-operator",
        "app.kubernetes.io/part-of": "training",
        "app.kubernetes.io/name": "training-1-nvl",
        "app.kubernetes.io/component": "pcs-computedomain",
        "grove.io/podcliqueset-replica-index": "1",
        "grove.io/mnnvl-group": "nvl",
    }


def test_the_nearest_layer_decides_and_none_opts_out() -> None:
    document = _training(**{GROUP: "nvl"})
    document["spec"]["template"]["podCliqueScalingGroups"][0]["annotations"] = {GROUP: "none"}  # the group opts out
    api, _ = _run(document)
    assert "resourceClaims" not in _pod_spec(api, "training-0-workers-0-worker")
    assert not api.of_kind("ComputeDomain")
    document["spec"]["template"]["cliques"][2]["annotations"] = {GROUP: "rack-a"}  # the clique opts back in
    api, _ = _run(document)
    assert _pod_spec(api, "training-0-workers-0-worker")["resourceClaims"][0]["resourceClaimTemplateName"] == (
        "training-0-rack-a"
    )
    assert sorted(d["metadata"]["name"] for d in api.of_kind("ComputeDomain")) == [
        "training-0-rack-a",
        "training-1-rack-a",
    ]


def test_scale_in_and_deletion_release_the_finalizer_and_delete_the_domains() -> None:
    document = _training(**{GROUP: "nvl"})
    api, reconciler = _run(document)
    document["spec"]["replicas"] = 1
    api.apply(document)
    reconciler.converge()
    assert [d["metadata"]["name"] for d in api.of_kind("ComputeDomain")] == ["training-0-nvl"]
    api.remove("PodCliqueSet", namespace=NS, name="training")
    assert api.of_kind("ComputeDomain")[0]["metadata"]["deletionTimestamp"]  # held by its finalizer
    reconciler.converge()
    assert not api.of_kind("ComputeDomain")


def test_the_annotation_is_immutable() -> None:
    document = _training(**{GROUP: "nvl"})
    api, reconciler = _run(document)
    document["metadata"]["annotations"] = {GROUP: "other"}
    document["spec"]["template"]["cliques"][0]["annotations"] = {GROUP: "none"}
    api.apply(document)
    assert reconciler.reconcile(NS, "training").errors == [
        'metadata.annotations.grove.io/mnnvl-group: Invalid value: "other": annotation grove.io/mnnvl-group is '
        'immutable and cannot be changed from "nvl" to "other"',
        "spec.template.cliques[0].annotations.grove.io/mnnvl-group: Forbidden: annotation grove.io/mnnvl-group "
        "cannot be added after creation",
    ]
