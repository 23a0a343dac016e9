"""PodGang + pods + nodes → GangRequest: groups in reference order, one demand per group, pack scopes, refusals."""

from __future__ import annotations

import pytest

from api.core import Node, Pod
from api.grove import PodGang
from placement import solve
from placement.request import PackScope, Status
from scheduler.extender.translation.cluster_view import cluster_view
from scheduler.extender.translation.gang_request import (
    GangNotReady,
    GangRequestError,
    gang_request,
    request_for_pod,
    single_pod_request,
)
from tests.builders import make_node, make_pod, make_podgang

HOST = "kubernetes.io/hostname"
CLIQUE = "nvidia.com/gpu.clique"
BLOCK = "network.topology.nvidia.com/block"


def _nodes() -> list[Node]:
    return [make_node("a").gpus(8).obj(), make_node("b").gpus(8).obj(), make_node("tainted").gpus(8).taint("x").obj()]


def _pods(*pods: Pod) -> dict[str, Pod]:
    return {pod.key: pod for pod in pods}


def _worker(name: str, gpus: int = 4) -> Pod:
    return make_pod(name).gpus(gpus).cpu("8").gang("g").clique("g-worker").toleration("x", operator="Exists").obj()


def _leader() -> Pod:
    return make_pod("l0").cpu("2").gang("g").clique("g-leader").priority(100).obj()


def test_groups_demand_min_replicas_and_priority() -> None:
    gang = make_podgang("g").group("g-leader", pods=["l0"]).group("g-worker", pods=["w1", "w0"], min_replicas=1).obj()
    request = gang_request(gang, _pods(_leader(), _worker("w0"), _worker("w1")), _nodes())
    assert request.key == "default/g"
    leader, workers = request.groups
    assert (leader.name, leader.pods, leader.min_replicas) == ("g-leader", ("default/l0",), 1)
    assert workers.pods == ("default/w1", "default/w0")  # reference order, not name order
    assert workers.min_replicas == 1
    assert workers.demand == {"nvidia.com/gpu": 4, "cpu": 8000, "pods": 1}
    assert leader.eligible == frozenset({"a", "b"})  # the leader tolerates no taint
    assert workers.eligible is None  # workers tolerate it: every node passes
    assert request.priority == 100
    assert request.packs == ()


def test_pack_scopes_from_gang_group_configs_and_groups() -> None:
    gang = (
        make_podgang("g")
        .group("g-leader", pods=["l0"], preferred=HOST)
        .group("g-worker", pods=["w0", "w1"], required=CLIQUE)
        .group_config("g-sg-0", groups=["g-leader", "g-worker"], required=BLOCK)
        .pack(preferred=CLIQUE)
        .obj()
    )
    request = gang_request(gang, _pods(_leader(), _worker("w0"), _worker("w1")), _nodes())
    assert request.packs == (
        PackScope(groups=("g-leader", "g-worker"), preferred=CLIQUE),
        PackScope(groups=("g-leader", "g-worker"), required=BLOCK),
        PackScope(groups=("g-leader",), preferred=HOST),
        PackScope(groups=("g-worker",), required=CLIQUE),
    )


def test_empty_pack_constraint_adds_no_scope() -> None:
    raw = make_podgang("g").group("g-worker", pods=["w0"]).dict()
    raw["spec"]["topologyConstraint"] = {"packConstraint": {}}
    request = gang_request(PodGang.model_validate(raw), _pods(_worker("w0")), _nodes())
    assert request.packs == ()


def test_a_missing_guaranteed_pod_is_named_and_a_missing_extra_is_left_out() -> None:
    gang = make_podgang("g").group("g-worker", pods=["w0", "w9"]).obj()
    with pytest.raises(GangNotReady, match=r"podgroups\[0\] \(g-worker\) has 1 of 2 .*not created: default/w9"):
        gang_request(gang, _pods(_worker("w0")), _nodes())
    # minReplicas 1: w0 alone meets the guarantee, so the gang is planned without w9 (Grove may create it later)
    one = make_podgang("g").group("g-worker", pods=["w0", "w9"], min_replicas=1).obj()
    (group,) = gang_request(one, _pods(_worker("w0")), _nodes()).groups
    assert (group.pods, group.min_replicas) == (("default/w0",), 1)


def test_pods_of_one_group_that_differ_are_planned_at_their_peak() -> None:
    # One documented rule (the coordinator planned at the peak, the old translator refused): w0 asks 4 GPUs and 8
    # CPUs, w1 8 GPUs and 8 CPUs: the group is planned at 8 GPUs and 8 CPUs per pod, so either fits anywhere.
    gang = make_podgang("g").group("g-worker", pods=["w0", "w1"]).obj()
    request = gang_request(gang, _pods(_worker("w0"), _worker("w1", gpus=8)), _nodes())
    assert request.groups[0].demand == {"nvidia.com/gpu": 8, "cpu": 8000, "pods": 1}


def test_priority_is_the_highest_of_any_member_whatever_the_order() -> None:
    # One rule (the coordinator took the first pod's, the old translator the highest): the leader's 100 wins even
    # though the workers, referenced first, carry 10.
    gang = make_podgang("g").group("g-worker", pods=["w0"]).group("g-leader", pods=["l0"]).obj()
    worker = make_pod("w0").gpus(4).gang("g").priority(10).toleration("x", operator="Exists").obj()
    assert gang_request(gang, _pods(worker, _leader()), _nodes()).priority == 100


def test_bound_members_count_and_hold_a_required_domain() -> None:
    # w0 is bound on a (clique c1); w1 and w2 wait. minReplicas 3 → 2 left to place, and the required clique pack
    # keeps them to c1's nodes (a and b; c is in c2).
    nodes = [make_node(n).gpus(8).label(CLIQUE, c).obj() for n, c in (("a", "c1"), ("b", "c1"), ("c", "c2"))]
    gang = make_podgang("g").group("g-worker", pods=["w0", "w1", "w2"], required=CLIQUE).obj()
    bound = make_pod("w0").gpus(4).gang("g").on("a").obj()
    request = gang_request(gang, _pods(bound, make_pod("w1").gpus(4).obj(), make_pod("w2").gpus(4).obj()), nodes)
    (group,) = request.groups
    assert group.pods == ("default/w1", "default/w2") and group.min_replicas == 2
    assert group.eligible == frozenset({"a", "b"})


def test_placed_members_excluded_nodes_and_a_single_pod_request() -> None:
    # w0 assumed on b (not bound yet): a fact like a bound pod. kube-scheduler refused node a for the group.
    gang = make_podgang("g").group("g-worker", pods=["w0", "w1", "w2"], min_replicas=2).obj()
    pods = _pods(_worker("w0"), _worker("w1"), _worker("w2"))
    request = gang_request(gang, pods, _nodes(), placed={"default/w0": "b"}, excluded={"g-worker": frozenset({"a"})})
    (group,) = request.groups
    assert group.pods == ("default/w1", "default/w2") and group.min_replicas == 1
    assert group.eligible == frozenset({"b", "tainted"})  # every node but the excluded one (workers tolerate x)
    extra = gang_request(gang, pods, _nodes(), placed={"default/w0": "b", "default/w1": "b"}, only="default/w2")
    assert [(g.pods, g.min_replicas) for g in extra.groups] == [(("default/w2",), 1)]


def test_a_group_with_nothing_left_to_place_drops_out_with_its_packs() -> None:
    gang = make_podgang("g").group("g-leader", pods=["l0"], preferred=HOST).group("g-worker", pods=["w0"]).obj()
    leader = make_pod("l0").cpu("2").gang("g").on("a").obj()
    request = gang_request(gang, _pods(leader, _worker("w0")), _nodes())
    assert [g.name for g in request.groups] == ["g-worker"] and request.packs == ()


def test_a_missing_or_gated_guarantee_is_not_ready_yet() -> None:
    gang = make_podgang("g").group("g-worker", pods=["w0", "w1"]).obj()
    with pytest.raises(GangNotReady, match=r"1 not created yet, 0 still gated; not created: default/w1"):
        gang_request(gang, _pods(_worker("w0")), _nodes())
    gated = make_pod("w1").gpus(4).gang("g").gated().gated("example.com/quota").obj()
    with pytest.raises(GangNotReady, match=r"1 of 2 guaranteed pods .* \(0 not created yet, 1 still gated\)"):
        gang_request(gang, _pods(_worker("w0"), gated), _nodes())


def test_a_pod_held_by_groves_gate_alone_is_planned_with_its_mates() -> None:
    # Grove lifts its gate once the PodGang exists, pod by pod: the gang is planned whole meanwhile, so the first pod
    # kube-scheduler pops has a node (a gate of anyone else's still holds the gang, above).
    gang = make_podgang("g").group("g-worker", pods=["w0", "w1"]).obj()
    gated = make_pod("w1").gpus(4).gang("g").gated().obj()
    request = gang_request(gang, _pods(_worker("w0"), gated), _nodes())
    assert sorted(request.groups[0].pods) == ["default/w0", "default/w1"]


def test_min_replicas_above_the_references_is_refused() -> None:
    gang = make_podgang("g").group("g-worker", pods=["w0"], min_replicas=2).obj()
    with pytest.raises(GangRequestError, match="minReplicas is 2 but only 1"):
        gang_request(gang, _pods(_worker("w0")), _nodes())


def test_group_config_naming_an_unknown_group_is_refused() -> None:
    gang = make_podgang("g").group("g-worker", pods=["w0"]).group_config("cfg", groups=["nope"], required=HOST).obj()
    with pytest.raises(GangRequestError, match=r"topologyConstraintGroupConfigs\[0\] \(cfg\).*nope"):
        gang_request(gang, _pods(_worker("w0")), _nodes())


def test_eligibility_is_the_intersection_over_distinct_pod_rules() -> None:
    w0 = make_pod("w0").gpus(4).node_selector("pool", "p1").obj()
    w1 = make_pod("w1").gpus(4).affinity_term(fields=[("metadata.name", "In", ["a", "b"])]).obj()
    nodes = [make_node("a").label("pool", "p1").obj(), make_node("b").obj(), make_node("c").label("pool", "p1").obj()]
    gang = make_podgang("g").group("c", pods=["w0", "w1"]).obj()
    # w0 allows {a, c}; w1 allows {a, b}: only a serves both
    assert gang_request(gang, _pods(w0, w1), nodes).groups[0].eligible == frozenset({"a"})


def test_a_pod_of_no_gang_is_a_gang_of_one() -> None:
    pod = make_pod("solo").gpus(2).priority(5).obj()
    request = request_for_pod(pod, podgangs={}, pods=_pods(pod), nodes=_nodes())
    assert request == single_pod_request(pod, _nodes())
    assert request.key == "default/solo"
    (group,) = request.groups
    assert (group.pods, group.min_replicas, group.demand) == (("default/solo",), 1, {"nvidia.com/gpu": 2, "pods": 1})
    assert group.eligible == frozenset({"a", "b"})
    assert request.priority == 5


def test_a_pod_whose_podgang_is_missing_is_refused() -> None:
    with pytest.raises(GangRequestError, match="names PodGang default/g, which does not exist"):
        request_for_pod(_worker("w0"), podgangs={}, pods={}, nodes=_nodes())


def test_request_for_pod_finds_its_gang() -> None:
    gang = make_podgang("g").group("g-worker", pods=["w0"]).obj()
    request = request_for_pod(_worker("w0"), podgangs={gang.key: gang}, pods=_pods(_worker("w0")), nodes=_nodes())
    assert request.key == "default/g"


def test_a_group_whose_every_guaranteed_pod_is_gated_is_not_ready_and_a_summary_counts_them() -> None:
    # Both groups' pods are gated: the first group stops the translation; asked for a summary (gated=True), both
    # groups are there with their full demand.
    gang = make_podgang("g").group("a", pods=["w0"]).group("b", pods=["w1"]).obj()
    quota = "example.com/quota"  # someone else's gate: Grove's own is planned through
    pods = _pods(
        make_pod("w0").gpus(4).gang("g").gated(quota).obj(), make_pod("w1").gpus(2).gang("g").gated(quota).obj()
    )
    with pytest.raises(GangNotReady, match=r"\(a\) has 0 of 1 guaranteed pods"):
        gang_request(gang, pods, _nodes())
    summary = gang_request(gang, pods, _nodes(), gated=True)
    assert [(g.name, g.demand["nvidia.com/gpu"]) for g in summary.groups] == [("a", 4), ("b", 2)]


def _mnnvl_worker(name: str, group: str, domain: str | None) -> Pod:
    builder = make_pod(name).gpus(8).gang("g").clique(group)
    return (builder.claim("mnnvl-claim", template=domain) if domain else builder).obj()


def test_pods_of_one_compute_domain_get_one_required_nvlink_pack() -> None:
    # Grove's mnnvl/injection.go gives a ComputeDomain's GPU pods the claim mnnvl-claim on its template
    # <pcs>-<r>-<group>: those pods need one multi-node NVLink domain, whatever else the PodGang says.
    gang = (
        make_podgang("g")
        .group("g-leader", pods=["l0"])
        .group("g-a", pods=["a0"])
        .group("g-b", pods=["b0"])
        .group("g-other", pods=["o0"])
        .obj()
    )
    pods = _pods(
        _leader(),
        _mnnvl_worker("a0", "g-a", "pcs-0-nvl"),
        _mnnvl_worker("b0", "g-b", "pcs-0-nvl"),
        _mnnvl_worker("o0", "g-other", "pcs-0-rack2"),
    )
    nodes = [make_node(n).gpus(8).label(CLIQUE, c).obj() for n, c in (("a", "c1"), ("b", "c1"), ("c", "c2"))]
    request = gang_request(gang, pods, nodes)
    assert request.packs == (  # by ComputeDomain: pcs-0-nvl, pcs-0-rack2
        PackScope(groups=("g-a", "g-b"), required=CLIQUE),
        PackScope(groups=("g-other",), required=CLIQUE),
    )
    assert gang_request(gang, pods, _nodes()).packs == ()  # no node says its NVLink domain: nothing to pack by


def test_a_compute_domains_pods_are_refused_rather_than_split_across_nvlink_domains() -> None:
    gang = make_podgang("g").group("g-a", pods=["a0"]).group("g-b", pods=["b0"]).obj()
    nodes = [make_node(n).gpus(8).label(CLIQUE, c).obj() for n, c in (("a", "c1"), ("b", "c1"), ("c", "c2"))]
    busy = make_pod("busy").gpus(8).on("b").obj()  # c1 has one free node left, c2 one
    view = cluster_view(nodes, [busy])
    claimed = _pods(_mnnvl_worker("a0", "g-a", "pcs-0-nvl"), _mnnvl_worker("b0", "g-b", "pcs-0-nvl"))
    refused = solve(gang_request(gang, claimed, nodes), view)
    assert refused.status == Status.INFEASIBLE and CLIQUE in refused.reason
    plain = _pods(_mnnvl_worker("a0", "g-a", None), _mnnvl_worker("b0", "g-b", None))
    assert set(solve(gang_request(gang, plain, nodes), view).assignment.values()) == {"a", "c"}
