"""The pure desired-state function and the objects built from it, on the seeds' examples (reference §2–§5)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from api.grove import ClusterTopologyBinding, TopologyConstraint
from scheduler.reconcile.desired.gangs import podgang_object
from scheduler.reconcile.desired.pods import pod_name
from scheduler.reconcile.desired.state import desired_state
from scheduler.reconcile.rules.topology import translate
from tests.reconcile.examples import POD_NAME, built_pod, example, pcs_model


def test_disaggregated_example_gives_thirteen_pods_in_grove_gangs() -> None:
    pcs = pcs_model(example("multinode-disaggregated"))
    desired = desired_state(pcs, None)
    # PCSG minAvailable defaults to 1: prefill replica 0 and decode replica 0 join the base gang, prefill
    # replica 1 gets scaled gang <pcs>-0-prefill-<1-1>.
    assert [gang.name for gang in desired.gangs] == ["multinode-disaggregated-0", "multinode-disaggregated-0-prefill-0"]
    base, scaled = desired.gangs
    assert [(c.fqn, c.replicas, c.min_available) for c in base.cliques] == [
        ("multinode-disaggregated-0-prefill-0-pleader", 1, 1),
        ("multinode-disaggregated-0-prefill-0-pworker", 4, 4),
        ("multinode-disaggregated-0-decode-0-dleader", 1, 1),
        ("multinode-disaggregated-0-decode-0-dworker", 2, 2),
    ]
    assert [(c.fqn, c.replicas, c.base_gang) for c in scaled.cliques] == [
        ("multinode-disaggregated-0-prefill-1-pleader", 1, "multinode-disaggregated-0"),
        ("multinode-disaggregated-0-prefill-1-pworker", 4, "multinode-disaggregated-0"),
    ]
    # 2 prefill replicas × (1 + 4) + 1 decode replica × (1 + 2) = 13
    assert sum(c.replicas for gang in desired.gangs for c in gang.cliques) == 13
    assert base.is_base and not scaled.is_base


def test_pod_carries_grove_names_labels_env_and_gate() -> None:
    pcs = pcs_model(example("multinode-disaggregated"))
    pcs.metadata.uid = "pcs-uid"
    scaled = desired_state(pcs, None).gangs[1]
    worker = scaled.cliques[1]
    name = pod_name(worker.fqn, random.Random(7))
    pod = built_pod(pcs, worker, index=2, name=name)
    match = POD_NAME.match(pod["metadata"]["name"])
    assert match and match["clique"] == "multinode-disaggregated-0-prefill-1-pworker"
    labels = pod["metadata"]["labels"]
    assert labels["grove.io/podgang"] == "multinode-disaggregated-0-prefill-0"
    assert labels["grove.io/base-podgang"] == "multinode-disaggregated-0"
    assert labels["grove.io/podclique"] == worker.fqn
    assert labels["grove.io/podclique-pod-index"] == "2"
    assert labels["grove.io/podcliqueset-replica-index"] == "0"
    assert labels["grove.io/podcliquescalinggroup"] == "multinode-disaggregated-0-prefill"
    assert labels["grove.io/podcliquescalinggroup-replica-index"] == "1"
    assert labels["app.kubernetes.io/part-of"] == "multinode-disaggregated"
    assert labels["app.kubernetes.io/component"] == "pcsg-podclique"
    spec = pod["spec"]
    assert spec["schedulingGates"] == [{"name": "grove.io/podgang-pending-creation"}]
    assert spec["schedulerName"] == "grove"
    assert spec["hostname"] == "multinode-disaggregated-0-prefill-1-pworker-2"
    assert spec["subdomain"] == "multinode-disaggregated-0"
    assert spec["tolerations"][0]["key"] == "fake-node"  # the user's pod spec survives whole
    assert spec["restartPolicy"] == "Always" and spec["terminationGracePeriodSeconds"] == 30
    env = {item["name"]: item for item in spec["containers"][0]["env"]}
    assert env["GROVE_PCS_NAME"]["value"] == "multinode-disaggregated"
    assert env["GROVE_PCLQ_NAME"]["value"] == worker.fqn
    assert env["GROVE_HEADLESS_SERVICE"]["value"] == "multinode-disaggregated-0.default.svc.cluster.local"
    assert env["GROVE_PCSG_TEMPLATE_NUM_PODS"]["value"] == "5"  # 1 pleader + 4 pworkers per group replica
    assert env["GROVE_PCLQ_POD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.labels['grove.io/podclique-pod-index']"
    )
    owner = pod["metadata"]["ownerReferences"][0]
    # Grove's chain: the pod's controller is its PodClique (whose own is the scaling group, then the PCS).
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "PodClique",
        worker.fqn,
        f"uid-of-{worker.fqn}",
        True,
    )


def test_user_env_named_like_grove_env_is_replaced_not_duplicated() -> None:
    document = example("multinode-aggregated")
    document["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["containers"][0]["env"] = [
        {"name": "GROVE_PCS_NAME", "value": "stale"},
        {"name": "MY_VAR", "value": "kept"},
    ]
    pcs = pcs_model(document)
    clique = desired_state(pcs, None).gangs[0].cliques[0]
    env = built_pod(pcs, clique, index=0, name="p")["spec"]["containers"][0]["env"]
    names = [item["name"] for item in env]
    assert names.count("GROVE_PCS_NAME") == 1 and "MY_VAR" in names
    assert next(i for i in env if i["name"] == "GROVE_PCS_NAME")["value"] == "multinode-aggregated"


@pytest.mark.parametrize(("replicas", "gangs"), [(2, 2), (3, 3)], ids=["two-instances", "three-instances"])
def test_aggregated_example_gang_per_extra_instance(replicas: int, gangs: int) -> None:
    document = example("multinode-aggregated")
    document["spec"]["template"]["podCliqueScalingGroups"][0]["replicas"] = replicas
    desired = desired_state(pcs_model(document), None)
    # minAvailable 1: instance 0 in the base gang, each further instance k in gang model-instance-<k-1>
    expected = ["multinode-aggregated-0"] + [f"multinode-aggregated-0-model-instance-{k}" for k in range(gangs - 1)]
    assert [gang.name for gang in desired.gangs] == expected
    assert all(sum(c.replicas for c in gang.cliques) == 4 for gang in desired.gangs)  # 1 leader + 3 workers


def test_pcsg_min_available_below_replicas_yields_scaled_gangs() -> None:
    desired = desired_state(pcs_model(example("training-scaled")), None)
    names = [gang.name for gang in desired.gangs]
    assert names == [
        "training-0",
        "training-0-workers-0",
        "training-0-workers-1",
        "training-1",
        "training-1-workers-0",
        "training-1-workers-1",
    ]
    base = desired.gangs[0]
    # Standalone cliques first, then the base PCSG replica's cliques in cliqueNames order.
    assert [(c.fqn, c.min_available) for c in base.cliques] == [
        ("training-0-coordinator", 1),
        ("training-0-workers-0-worker", 3),
        ("training-0-workers-0-parameter-server", 1),
    ]
    scaled = desired.gangs[2]
    assert [c.fqn for c in scaled.cliques] == ["training-0-workers-2-worker", "training-0-workers-2-parameter-server"]
    assert all(c.base_gang == "training-0" for c in scaled.cliques)


def test_podgang_lists_only_live_labelled_pods_sorted_by_name() -> None:
    pcs = pcs_model(example("multinode-aggregated"))
    gang = desired_state(pcs, None).gangs[0]
    worker = gang.cliques[1]

    def pod(name: str, *, gang_label: str = gang.name, terminating: bool = False) -> dict[str, object]:
        meta: dict[str, object] = {"name": name, "namespace": "default", "labels": {"grove.io/podgang": gang_label}}
        if terminating:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return {"metadata": meta}

    pods = [pod("w-c"), pod("w-a"), pod("w-gone", terminating=True), pod("w-other", gang_label="x"), pod("w-b")]
    obj = podgang_object(
        pcs=pcs, gang=gang, pods_by_clique={worker.fqn: pods}, scheduler_name="grove", topology_name=None
    )
    groups = {group["name"]: group for group in obj["spec"]["podgroups"]}
    assert [ref["name"] for ref in groups[worker.fqn]["podReferences"]] == ["w-a", "w-b", "w-c"]
    assert groups[worker.fqn]["minReplicas"] == 3
    assert obj["metadata"]["labels"]["grove.io/scheduler-name"] == "grove"
    assert obj["metadata"]["labels"]["app.kubernetes.io/component"] == "podgang"


BINDING = ClusterTopologyBinding.model_validate(
    {
        "metadata": {"name": "grove-topology"},
        "spec": {
            "levels": [
                {"domain": "zone", "key": "topology.kubernetes.io/zone"},
                {"domain": "block", "key": "network.topology.nvidia.com/block"},
                {"domain": "rack", "key": "nvidia.com/gpu.clique"},
                {"domain": "host", "key": "kubernetes.io/hostname"},
            ]
        },
    }
)


def _with_topology(*, group_pack: dict[str, str] | None) -> dict[str, object]:
    document = example("multinode-aggregated")
    template = document["spec"]["template"]
    template["topologyConstraint"] = {"topologyName": "grove-topology", "pack": {"required": "block"}}
    template["cliques"][1]["topologyConstraint"] = {"pack": {"preferred": "host"}}
    group = template["podCliqueScalingGroups"][0]
    group["replicas"], group["minAvailable"] = 3, 2
    if group_pack is not None:
        group["topologyConstraint"] = {"pack": group_pack}
    return document


def test_topology_domains_become_node_label_keys_in_base_and_scaled_gangs() -> None:
    pcs = pcs_model(_with_topology(group_pack={"required": "rack"}))
    desired = desired_state(pcs, BINDING)
    base, scaled = desired.gangs
    assert base.constraint and base.constraint.packConstraint
    assert base.constraint.packConstraint.required == "network.topology.nvidia.com/block"
    # One group config per base replica of the PCSG (minAvailable 2), named <pcsg-fqn>-<i>.
    assert [(c.name, c.pod_group_names) for c in base.group_configs] == [
        (
            "multinode-aggregated-0-model-instance-0",
            ("multinode-aggregated-0-model-instance-0-leader", "multinode-aggregated-0-model-instance-0-worker"),
        ),
        (
            "multinode-aggregated-0-model-instance-1",
            ("multinode-aggregated-0-model-instance-1-leader", "multinode-aggregated-0-model-instance-1-worker"),
        ),
    ]
    assert all(
        c.constraint and c.constraint.packConstraint.required == "nvidia.com/gpu.clique" for c in base.group_configs
    )  # type: ignore[union-attr]
    assert scaled.name == "multinode-aggregated-0-model-instance-0" and not scaled.group_configs
    assert scaled.constraint and scaled.constraint.packConstraint
    assert scaled.constraint.packConstraint.required == "nvidia.com/gpu.clique"
    worker = scaled.cliques[1]
    assert worker.constraint and worker.constraint.packConstraint
    assert worker.constraint.packConstraint.preferred == "kubernetes.io/hostname"
    obj = podgang_object(pcs=pcs, gang=base, pods_by_clique={}, scheduler_name="grove", topology_name="grove-topology")
    assert obj["metadata"]["annotations"]["grove.io/topology-name"] == "grove-topology"
    assert obj["spec"]["topologyConstraint"] == {"packConstraint": {"required": "network.topology.nvidia.com/block"}}
    assert desired.topology_translated


def test_scaled_gang_without_group_constraint_falls_back_to_pcs_constraint() -> None:
    desired = desired_state(pcs_model(_with_topology(group_pack=None)), BINDING)
    base, scaled = desired.gangs
    assert not base.group_configs
    assert scaled.constraint == base.constraint  # Grove's fallback (≠GREP-244)


def test_domain_missing_from_binding_is_skipped() -> None:
    constraint = TopologyConstraint.model_validate({"pack": {"required": "datacenter", "preferred": "rack"}})
    translated = translate(constraint, BINDING)
    assert translated and translated.packConstraint
    assert (translated.packConstraint.required, translated.packConstraint.preferred) == (None, "nvidia.com/gpu.clique")
    only_unknown = TopologyConstraint.model_validate({"pack": {"required": "datacenter"}})
    assert translate(only_unknown, BINDING) is None


def test_pcs_replicas_multiply_whole_gang_sets() -> None:
    document = example("multinode-disaggregated")
    document["spec"]["replicas"] = 3
    desired = desired_state(pcs_model(document), None)
    per_replica = Counter(gang.pcs_replica for gang in desired.gangs)
    assert per_replica == {0: 2, 1: 2, 2: 2}
    assert desired.gangs[2].name == "multinode-disaggregated-1"
