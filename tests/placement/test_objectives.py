"""One test per soft objective and for best-effort extras, each with a case where it can and cannot be met."""

from __future__ import annotations

import pytest

from placement import Status, solve, violations
from placement.score import placement_score
from scheduler.extender.translation.gang_request import gang_request
from tests.builders import make_node, make_pod, make_podgang
from tests.placement.cluster import CLIQUE, GPU, ZONE, gang, group, hosts, pack, view
from topology import HostSpec


def cliques_of(assignment: dict[str, str]) -> set[str]:
    return {node.split("h")[0] for node in assignment.values()}  # z0c1h0 → z0c1


def test_preferred_is_honoured_when_a_domain_can_hold_the_gang() -> None:
    # 3 pods × 4 GPUs = 12: clique c01 (16 free) holds them; c00 has only 8 free.
    cluster = view(hosts(), used={"z0c0h0": {GPU: 8}})
    request = gang(group("w", 3, gpus=4), packs=[pack("w", preferred=CLIQUE)])
    result = solve(request, cluster)
    assert result.status == Status.PLACED
    assert cliques_of(dict(result.assignment)) == {"z0c1"}
    assert result.objective_parts["preferred"] == 0 and result.placement_score == 1.0


def test_preferred_is_relaxed_when_no_domain_can_hold_the_gang() -> None:
    # 5 pods × 4 GPUs = 20 > 16 in any clique: it must span two cliques, but only two, and still be placed.
    cluster = view(hosts())
    request = gang(group("w", 5, gpus=4), packs=[pack("w", preferred=CLIQUE)])
    result = solve(request, cluster)
    assert result.status == Status.PLACED
    assert violations(request, cluster, result) == []
    assert len(cliques_of(dict(result.assignment))) == 2
    assert result.objective_parts["preferred"] == 1


def test_narrow_domains_before_broad_and_partly_used_before_whole() -> None:
    # Two zones × two cliques. A 2-GPU gang fits in any node: it should land on a partly used node, keeping
    # every wholly free node and clique intact.
    cluster = view(hosts(zones=2), used={"z1c1h1": {GPU: 5}})
    result = solve(gang(group("w", 2, gpus=1)), cluster)
    assert set(result.assignment.values()) == {"z1c1h1"}
    assert result.objective_parts["fresh:host"] == 0 and result.objective_parts["fresh:nvlink"] == 0


def test_best_effort_extras_go_where_they_fit_and_never_break_the_required_domain() -> None:
    # Required one clique; 2 guaranteed + 4 extras of 8 GPUs. A clique holds 2 such pods: the extras have no
    # room in the chosen clique and must not spill into the other one.
    cluster = view(hosts())
    request = gang(group("w", 6, gpus=8, min_replicas=2), packs=[pack("w", required=CLIQUE)])
    result = solve(request, cluster)
    assert result.status == Status.PLACED
    assert violations(request, cluster, result) == []
    assert len(result.assignment) == 2 and result.objective_parts["extras-missing"] == 4


def test_best_effort_extras_fill_free_room_beyond_used_nodes() -> None:
    # No pack: 2 guaranteed + 2 extras of 8 GPUs on four empty nodes: all four run, one node each.
    cluster = view(hosts())
    request = gang(group("w", 4, gpus=8, min_replicas=2))
    result = solve(request, cluster)
    assert len(result.assignment) == 4 and len(set(result.assignment.values())) == 4


def test_taints_and_selectors_reach_the_solver_as_eligible_sets() -> None:
    nodes = [
        make_node("tainted").gpus(8).taint("dedicated", "infer").obj(),
        make_node("wrong-pool").gpus(8).label("pool", "b").obj(),
        make_node("right").gpus(8).label("pool", "a").obj(),
    ]
    pods = {p.key: p for p in (make_pod(f"p{i}").gpus(4).node_selector("pool", "a").gang("g").obj() for i in range(2))}
    request = gang_request(make_podgang("g").group("w", pods=["p0", "p1"]).obj(), pods, nodes)
    cluster = view([HostSpec(n.name, n.metadata.labels, n.allocatable()) for n in nodes])
    result = solve(request, cluster)
    assert set(result.assignment.values()) == {"right"}
    three = gang_request(
        make_podgang("g").group("w", pods=["p0", "p1", "p2"]).obj(),
        {**pods, "default/p2": make_pod("p2").gpus(4).node_selector("pool", "a").gang("g").obj()},
        nodes,
    )
    refused = solve(three, cluster)
    assert refused.status == Status.INFEASIBLE and "1 eligible nodes" in refused.reason


@pytest.mark.parametrize(
    ("values", "bounds", "expected"),
    [
        # preferred, span nvlink, span zone, fresh nvlink, fresh host, extras-missing (ignored)
        pytest.param((0, 1, 1, 0, 0, 3), (0, 1, 1, 0, 0, 0), 1.0, id="at-every-bound"),
        pytest.param((0, 2, 1, 0, 0, 0), (0, 1, 1, 0, 0, 0), 2 / 3, id="two-racks-where-one-would-do"),  # (1+1)/(1+2)
        pytest.param((0, 1, 1, 1, 0, 0), (0, 1, 1, 0, 0, 0), 1 / 2, id="broke-a-free-nvlink-domain"),  # 1/(1+1)
        pytest.param((1, 2, 1, 0, 3, 0), (0, 1, 1, 0, 1, 0), 1 / 2 * 2 / 3 * 2 / 4, id="several-misses-multiply"),
    ],
)
def test_placement_score_formula(values: tuple[int, ...], bounds: tuple[int, ...], expected: float) -> None:
    quality = (True,) * (len(values) - 1) + (False,)  # every tier but extras-missing
    assert placement_score(values, bounds, quality) == pytest.approx(expected)


def test_zone_pack_uses_labels_not_names() -> None:
    # Required zone: z0 is half used, z1 is free; 3 × 8-GPU pods need 24 GPUs → only z1 (32 free) holds them.
    cluster = view(hosts(zones=2), used={"z0c0h0": {GPU: 8}, "z0c1h0": {GPU: 8}})
    request = gang(group("w", 3, gpus=8), packs=[pack("w", required=ZONE)])
    result = solve(request, cluster)
    assert {n[:2] for n in result.assignment.values()} == {"z1"}
