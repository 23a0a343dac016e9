"""PodGang + pods + nodes → GangRequest: groups in reference order, one demand per group, pack scopes, refusals."""

from __future__ import annotations

import pytest

from api.grove import PodGang
from api.kube import Node, Pod
from placement.request import PackScope
from scheduler.gang_request import GangRequestError, gang_request, request_for_pod, single_pod_request
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


def test_missing_pod_is_named() -> None:
    gang = make_podgang("g").group("g-worker", pods=["w0", "w9"]).obj()
    with pytest.raises(GangRequestError, match=r"podgroups\[0\] \(g-worker\): pod default/w9 is referenced"):
        gang_request(gang, _pods(_worker("w0")), _nodes())


def test_pods_of_one_group_must_be_alike() -> None:
    gang = make_podgang("g").group("g-worker", pods=["w0", "w1"]).obj()
    with pytest.raises(GangRequestError, match=r"pod default/w1 requests .* unlike default/w0"):
        gang_request(gang, _pods(_worker("w0"), _worker("w1", gpus=8)), _nodes())


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
