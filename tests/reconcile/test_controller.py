"""The controller loop against the in-memory API: convergence, idempotence, scaling, deletion, gates, status."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from scheduler.reconcile.client import ApiError
from scheduler.reconcile.memory_client import InMemoryApi
from tests.reconcile.examples import EXAMPLES, POD_NAME, cluster, example, gated, pod_names, pods_per_gang, reconciler

NS = "default"


def _converged(api: InMemoryApi, seed: int = 1) -> InMemoryApi:
    reconciler(api, seed).converge()
    return api


def test_converges_to_grove_objects_and_then_writes_nothing() -> None:
    api = _converged(cluster(example("multinode-disaggregated")))
    assert pods_per_gang(api) == {"multinode-disaggregated-0": 8, "multinode-disaggregated-0-prefill-0": 5}
    assert all(POD_NAME.match(name) for name in pod_names(api))
    assert [s["metadata"]["name"] for s in api.of_kind("Service")] == ["multinode-disaggregated-0"]
    for gang in api.of_kind("PodGang"):
        assert gang["status"]["phase"] == "Pending"
        initialized = next(c for c in gang["status"]["conditions"] if c["type"] == "Initialized")
        assert (initialized["status"], initialized["reason"]) == ("True", "PodGangPodsCreated")
    writes = len(api.writes)
    outcome = reconciler(api).reconcile(NS, "multinode-disaggregated")
    assert outcome.writes == 0 and len(api.writes) == writes


def test_restart_with_another_random_source_never_duplicates_pods() -> None:
    api = _converged(cluster(example("multinode-aggregated")), seed=1)
    before = pod_names(api)
    _converged(api, seed=99)  # a fresh process: nothing remembered, different name suffixes
    assert pod_names(api) == before


def test_deleted_pod_is_replaced_at_its_own_index_and_listed_in_its_gang() -> None:
    api = _converged(cluster(example("multinode-aggregated")))
    victim = next(p for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podclique-pod-index"] == "1")
    clique = victim["metadata"]["labels"]["grove.io/podclique"]
    api.remove("Pod", namespace=NS, name=victim["metadata"]["name"])
    _converged(api)
    same_clique = [p for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podclique"] == clique]
    assert sorted(p["metadata"]["labels"]["grove.io/podclique-pod-index"] for p in same_clique) == ["0", "1", "2"]
    replacement = next(p for p in same_clique if p["metadata"]["labels"]["grove.io/podclique-pod-index"] == "1")
    assert replacement["metadata"]["name"] != victim["metadata"]["name"]
    assert replacement["spec"]["hostname"] == f"{clique}-1"
    gang = next(
        g for g in api.of_kind("PodGang") if g["metadata"]["name"] == victim["metadata"]["labels"]["grove.io/podgang"]
    )
    refs = {r["name"] for g in gang["spec"]["podgroups"] if g["name"] == clique for r in g["podReferences"]}
    assert replacement["metadata"]["name"] in refs and victim["metadata"]["name"] not in refs


def _scale_group(api: InMemoryApi, name: str, replicas: int) -> None:
    """``kubectl scale pcsg <name> --replicas=N``: the live object's count, not the template's, after creation."""
    api.scale("PodCliqueScalingGroup", namespace=NS, name=name, replicas=replicas)


def test_aggregated_group_scaled_two_to_three_adds_one_gang_of_four() -> None:
    api = _converged(cluster(example("multinode-aggregated")))
    before = pod_names(api)
    assert pods_per_gang(api) == {"multinode-aggregated-0": 4, "multinode-aggregated-0-model-instance-0": 4}
    _scale_group(api, "multinode-aggregated-0-model-instance", 3)
    _converged(api)
    assert pods_per_gang(api) == {
        "multinode-aggregated-0": 4,
        "multinode-aggregated-0-model-instance-0": 4,
        "multinode-aggregated-0-model-instance-1": 4,
    }
    assert before < pod_names(api)  # existing pods untouched
    assert len(api.of_kind("PodGang")) == 3


def test_scale_down_removes_whole_gangs_and_their_pods() -> None:
    document = example("multinode-aggregated")
    document["spec"]["replicas"] = 2
    api = _converged(cluster(document))
    assert len(api.of_kind("PodGang")) == 4 and len(api.of_kind("Service")) == 2
    _scale_group(api, "multinode-aggregated-0-model-instance", 1)
    _scale_group(api, "multinode-aggregated-1-model-instance", 1)
    _converged(api)
    assert pods_per_gang(api) == {"multinode-aggregated-0": 4, "multinode-aggregated-1": 4}
    document = copy.deepcopy(api.objects[("PodCliqueSet", NS, "multinode-aggregated")])
    document["spec"]["replicas"] = 1
    api.apply(document)
    _converged(api)
    assert pods_per_gang(api) == {"multinode-aggregated-0": 4}
    assert [g["metadata"]["name"] for g in api.of_kind("PodGang")] == ["multinode-aggregated-0"]
    assert [s["metadata"]["name"] for s in api.of_kind("Service")] == ["multinode-aggregated-0"]


def _indices(api: InMemoryApi, clique: str) -> list[str]:
    pods = [p for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podclique"] == clique]
    return sorted(p["metadata"]["labels"]["grove.io/podclique-pod-index"] for p in pods)


def test_podclique_scale_in_removes_pods_in_groves_deletion_order_and_scale_out_refills_the_lowest_index() -> None:
    # Mirrors Grove's deletionsort_test.go: unscheduled pods go before scheduled ones, whatever their index.
    document = example("multinode-aggregated")
    document["spec"]["template"]["cliques"][1]["spec"]["minAvailable"] = 1
    api = _converged(cluster(document))
    worker = "multinode-aggregated-0-model-instance-0-worker"
    pods = {
        p["metadata"]["labels"]["grove.io/podclique-pod-index"]: p
        for p in api.of_kind("Pod")
        if p["metadata"]["labels"]["grove.io/podclique"] == worker
    }
    for index in ("1", "2"):
        api.bind_pod(NS, pods[index]["metadata"]["name"], "node-a")
    api.scale("PodClique", namespace=NS, name=worker, replicas=2)
    _converged(api)
    assert _indices(api, worker) == ["1", "2"]  # index 0 was the one not scheduled
    api.scale("PodClique", namespace=NS, name=worker, replicas=3)
    _converged(api)
    assert _indices(api, worker) == ["0", "1", "2"]  # the lowest free index is reused


def test_template_replicas_apply_to_new_objects_only_once_they_exist_scaling_owns_the_count() -> None:
    # Grove: PodClique and PodCliqueScalingGroup `replicas` come from the template only when they are created.
    api = _converged(cluster(example("multinode-aggregated")))
    document = copy.deepcopy(api.objects[("PodCliqueSet", NS, "multinode-aggregated")])
    document["spec"]["template"]["podCliqueScalingGroups"][0]["replicas"] = 5
    document["spec"]["template"]["cliques"][1]["spec"]["replicas"] = 4  # minAvailable stays 3 (frozen)
    document["spec"]["template"]["cliques"][1]["spec"]["minAvailable"] = 3
    document["spec"]["replicas"] = 2
    api.apply(document)
    _converged(api)
    # replica 0 keeps its live counts (2 group replicas × (1 leader + 3 workers)); replica 1 is new: 5 × (1 + 4)
    assert sum(n for g, n in pods_per_gang(api).items() if g.startswith("multinode-aggregated-0")) == 8
    assert sum(n for g, n in pods_per_gang(api).items() if g.startswith("multinode-aggregated-1")) == 25


def test_deleting_the_pcs_removes_everything_it_created() -> None:
    api = _converged(cluster(example("multinode-disaggregated")))
    # Without a garbage collector (objects dropped straight from the store), the reconciler cleans up itself.
    del api.objects[("PodCliqueSet", NS, "multinode-disaggregated")]
    reconciler(api).reconcile(NS, "multinode-disaggregated")
    assert not api.of_kind("Pod") and not api.of_kind("PodGang") and not api.of_kind("Service")


def test_gates_lift_for_base_gang_first_and_for_scaled_gangs_once_base_is_scheduled() -> None:
    document = example("training-scaled")
    document["spec"]["replicas"] = 1
    api = _converged(cluster(document))
    pods = api.of_kind("Pod")
    base = [p for p in pods if p["metadata"]["labels"]["grove.io/podgang"] == "training-0"]
    scaled = [p for p in pods if p not in base]
    assert len(base) == 6 and len(scaled) == 10  # base: 1 coordinator + 4 workers + 1 ps; 2 scaled × (4 + 1)
    assert not any(gated(p) for p in base)
    assert all(gated(p) for p in scaled)
    assert reconciler(api).reconcile(NS, "training").gated == 10  # reported, so a caller can see who waits
    # Bind the base gang up to one short of its minimum: workers need 3 (minAvailable), we bind 2.
    workers = [p for p in base if p["metadata"]["labels"]["grove.io/podclique"] == "training-0-workers-0-worker"]
    others = [p for p in base if p not in workers]
    for pod in [*others, *workers[:2]]:
        api.bind_pod(NS, pod["metadata"]["name"], "node-a")
    _converged(api)
    assert all(gated(p) for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podgang"] != "training-0")
    api.bind_pod(NS, workers[2]["metadata"]["name"], "node-b")
    _converged(api)
    assert not any(gated(p) for p in api.of_kind("Pod"))


def test_gate_is_kept_until_pod_is_listed_in_its_gang() -> None:
    api = cluster(example("multinode-aggregated"))
    rec = reconciler(api)
    rec.reconcile(NS, "multinode-aggregated")
    verbs = [(w.verb, w.kind) for w in api.writes]
    last_gang_write = max(i for i, (verb, kind) in enumerate(verbs) if kind == "PodGang" and verb == "create")
    first_ungate = min(i for i, (verb, _) in enumerate(verbs) if verb == "ungate")
    assert first_ungate > last_gang_write  # pods are created gated, listed, and only then ungated


def test_invalid_pcs_gets_condition_and_one_event_and_nothing_is_created() -> None:
    document = example("multinode-aggregated")
    document["spec"]["template"]["cliques"][1]["spec"]["minAvailable"] = 5  # replicas is 3
    api = cluster(document)
    outcome = reconciler(api).reconcile(NS, "multinode-aggregated")
    assert not outcome.valid
    assert not api.of_kind("Pod") and not api.of_kind("PodGang")
    status = api.objects[("PodCliqueSet", NS, "multinode-aggregated")]["status"]
    valid = next(c for c in status["conditions"] if c["type"] == "SpecValid")
    assert valid["status"] == "False" and valid["reason"] == "ValidationFailed"
    assert "spec.template.cliques[1].spec.minAvailable" in valid["message"] and "≤ replicas" in valid["message"]
    assert len(api.events) == 1 and api.events[0]["type"] == "Warning"
    assert "spec.template.cliques[1].spec.minAvailable" in api.events[0]["message"]
    again = reconciler(api).reconcile(NS, "multinode-aggregated")
    assert again.writes == 0 and len(api.events) == 1  # no event storm on every pass
    document["spec"]["template"]["cliques"][1]["spec"]["minAvailable"] = 2
    api.apply(document)
    _converged(api)
    assert len(api.of_kind("Pod")) == 8
    status = api.objects[("PodCliqueSet", NS, "multinode-aggregated")]["status"]
    assert next(c for c in status["conditions"] if c["type"] == "SpecValid")["status"] == "True"


def test_malformed_pcs_is_refused_with_the_field() -> None:
    document = example("multinode-aggregated")
    document["spec"]["replicas"] = "many"
    api = cluster(document)
    outcome = reconciler(api).reconcile(NS, "multinode-aggregated")
    assert not outcome.valid and outcome.errors[0].startswith("spec.replicas:")
    assert not api.of_kind("Pod")


def test_pcs_status_reports_replicas_availability_and_gang_phases() -> None:
    api = _converged(cluster(example("multinode-aggregated")))
    status = api.objects[("PodCliqueSet", NS, "multinode-aggregated")]["status"]
    assert status["replicas"] == 1 and status["availableReplicas"] == 0
    assert status["podGangStatuses"] == [
        {"name": "multinode-aggregated-0", "phase": "Pending"},
        {"name": "multinode-aggregated-0-model-instance-0", "phase": "Pending"},
    ]
    # Group minAvailable is 1: the replica is available once instance 0's cliques are at their minimum ready.
    for pod in api.of_kind("Pod"):
        if pod["metadata"]["labels"]["grove.io/podgang"] == "multinode-aggregated-0":
            api.set_pod_ready(NS, pod["metadata"]["name"])
    _converged(api)
    assert api.objects[("PodCliqueSet", NS, "multinode-aggregated")]["status"]["availableReplicas"] == 1


def test_extender_written_gang_status_survives_reconciles() -> None:
    api = _converged(cluster(example("multinode-aggregated")))
    gang = api.objects[("PodGang", NS, "multinode-aggregated-0")]
    gang["status"]["conditions"].append({"type": "Scheduled", "status": "True", "reason": "Bound"})
    gang["status"]["phase"] = "Running"
    _converged(api)
    status = api.objects[("PodGang", NS, "multinode-aggregated-0")]["status"]
    assert status["phase"] == "Running"
    assert {c["type"] for c in status["conditions"]} == {"Initialized", "Scheduled"}
    pcs_status = api.objects[("PodCliqueSet", NS, "multinode-aggregated")]["status"]
    assert pcs_status["podGangStatuses"][0] == {"name": "multinode-aggregated-0", "phase": "Running"}


def test_evicted_pod_is_replaced_and_terminating_pod_keeps_its_index_until_gone() -> None:
    api = _converged(cluster(example("multinode-aggregated")))
    pods = api.of_kind("Pod")
    evicted, leaving = pods[0], pods[1]
    evicted["status"] = {"phase": "Failed", "reason": "Evicted"}
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    _converged(api, seed=2)  # (seed 1 would draw the evicted pod's now-free name again)
    names = pod_names(api)
    assert evicted["metadata"]["name"] not in names and len(names) == 8  # evicted replaced at once
    assert leaving["metadata"]["name"] in names  # not replaced while it still holds its index and hostname
    clique = leaving["metadata"]["labels"]["grove.io/podclique"]
    gang = api.objects[("PodGang", NS, leaving["metadata"]["labels"]["grove.io/podgang"])]
    refs = {r["name"] for g in gang["spec"]["podgroups"] if g["name"] == clique for r in g["podReferences"]}
    assert leaving["metadata"]["name"] not in refs  # terminating pods are not gang members
    api.remove("Pod", namespace=NS, name=leaving["metadata"]["name"])
    _converged(api, seed=3)
    assert len(pod_names(api)) == 8 and leaving["metadata"]["name"] not in pod_names(api)


def _topology_example() -> tuple[dict[str, Any], dict[str, Any]]:
    binding, pcs = (d for d in yaml.safe_load_all((EXAMPLES / "disaggregated-topology.yaml").read_text()) if d)
    return binding, pcs


def test_topology_example_packs_by_node_label_keys_and_reports_levels() -> None:
    binding, pcs = _topology_example()
    api = _converged(cluster(binding, pcs))
    gangs = {g["metadata"]["name"]: g for g in api.of_kind("PodGang")}
    assert sorted(gangs) == ["disagg-tas-0", "disagg-tas-0-prefill-0", "disagg-tas-0-prefill-1"]
    base = gangs["disagg-tas-0"]
    assert base["spec"]["topologyConstraint"] == {"packConstraint": {"required": "network.topology.nvidia.com/block"}}
    assert [c["name"] for c in base["spec"]["topologyConstraintGroupConfigs"]] == [
        "disagg-tas-0-prefill-0",
        "disagg-tas-0-decode-0",
    ]
    assert gangs["disagg-tas-0-prefill-1"]["spec"]["topologyConstraint"] == {
        "packConstraint": {"required": "nvidia.com/gpu.clique"}
    }
    assert base["metadata"]["annotations"]["grove.io/topology-name"] == "gpu-topology"
    conditions = {c["type"]: c for c in api.objects[("PodCliqueSet", NS, "disagg-tas")]["status"]["conditions"]}
    assert conditions["TopologyLevelsUnavailable"]["status"] == "False"
    # The binding disappears after creation: Grove skips unknown domains and reports it, it does not refuse.
    api.remove("ClusterTopologyBinding", namespace="", name="gpu-topology")
    _converged(api)
    base = api.objects[("PodGang", NS, "disagg-tas-0")]
    assert "topologyConstraint" not in base["spec"] and len(api.of_kind("Pod")) == 16
    conditions = {c["type"]: c for c in api.objects[("PodCliqueSet", NS, "disagg-tas")]["status"]["conditions"]}
    assert (conditions["TopologyLevelsUnavailable"]["status"], conditions["TopologyLevelsUnavailable"]["reason"]) == (
        "Unknown",
        "ClusterTopologyNotFound",
    )


def test_topology_pcs_without_its_binding_is_refused_at_creation() -> None:
    _, pcs = _topology_example()
    api = cluster(pcs)
    outcome = reconciler(api).reconcile(NS, "disagg-tas")
    assert not outcome.valid and not api.of_kind("Pod")
    assert any("ClusterTopologyBinding 'gpu-topology' not found" in e for e in outcome.errors)


class _StrictPods(InMemoryApi):
    """An API server that, like kube-apiserver, validates pods it is asked to create."""

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj["kind"] == "Pod":
            for container in obj["spec"]["containers"]:
                if not container.get("image"):
                    raise ApiError(
                        422, f'Pod "{obj["metadata"]["name"]}" is invalid: spec.containers[0].image: Required value'
                    )
        return super().create(obj)


def test_pod_refused_by_the_api_server_marks_the_pcs_invalid_with_the_clique() -> None:
    document = example("multinode-aggregated")
    del document["spec"]["template"]["cliques"][1]["spec"]["podSpec"]["containers"][0]["image"]
    api = _StrictPods()
    api.apply(document)
    outcome = reconciler(api).reconcile(NS, "multinode-aggregated")
    assert not outcome.valid
    assert outcome.errors[0].startswith("spec.template.cliques[1].spec.podSpec: the API server refused its pod")
    assert "image: Required value" in api.events[0]["message"]
    assert not api.of_kind("PodGang")  # no gang is published over pods that cannot all exist
    assert not any(not gated(p) for p in api.of_kind("Pod"))


def test_live_reconciler_caps_replicas_and_ignores_a_scale_beyond_the_limit(caplog: Any) -> None:
    # Issue 10: the live reconciler had no cap either; a PodClique scaled to 10^9 must not become 10^9 pods.
    document = example("multinode-aggregated")
    document["spec"]["template"]["cliques"][1]["spec"]["replicas"] = 1_000_000_000
    api = cluster(document)
    outcome = reconciler(api).reconcile(NS, "multinode-aggregated")
    assert not outcome.valid and not api.of_kind("Pod")
    assert any("spec.template.cliques[1].spec.replicas: must be ≤ 10000" in e for e in outcome.errors)
    api = _converged(cluster(example("multinode-aggregated")))
    before = pod_names(api)
    api.scale("PodClique", namespace=NS, name="multinode-aggregated-0-model-instance-0-worker", replicas=10**9)
    _converged(api)
    assert pod_names(api) == before  # the template's 3 workers stay; the count is ignored and said so
    assert "ignoring replicas kind=PodClique name=multinode-aggregated-0-model-instance-0-worker" in caplog.text
