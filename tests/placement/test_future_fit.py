"""The future-fit tier: it only breaks ties the tiers above leave, and breaks them towards the plan that leaves
the recent gang shapes the most room (FGD-style, per domain)."""

from __future__ import annotations

from dataclasses import replace

from placement import ClusterView, SolveOptions, Status, WorkloadShape, solve, violations
from placement.shapes import shape_of, shapes_of
from tests.placement.cluster import CLIQUE, GPU, ZONE, gang, group, hosts, pack, view
from tests.placement.oracle import fragmented, plan_of

# Two cliques of three 8-GPU nodes, none wholly free: c00 has 2 + 2 + 2 GPUs free, c01 has 3 + 3 + 1.
USED = {"z0c0h0": {GPU: 6}, "z0c0h1": {GPU: 6}, "z0c0h2": {GPU: 6}, "z0c1h0": {GPU: 5}, "z0c1h1": {GPU: 5}}
USED["z0c1h2"] = {GPU: 7}
# Recent gangs: 6 GPUs in pods of 2, wanted in one clique: a clique hosts one while its nodes hold three 2-GPU pods.
# c00: 1 + 1 + 1 = 3 pods, can; c01: 1 + 1 + 0 = 2, cannot (its 7 free GPUs are fragmented).
SHAPE = WorkloadShape("nvlink", pod_gpus=2, gpus=6)


def cluster(used: dict[str, dict[str, int]], *shapes: WorkloadShape) -> ClusterView:
    return replace(view(hosts(per_clique=3), used=used), shapes=shapes)


def test_a_small_gang_goes_where_the_recent_shapes_could_not_go_anyway() -> None:
    # One 2-GPU pod. Both cliques are in one zone and no node is wholly free, so every tier above future-fit is
    # equal on every node that fits it. Anywhere in c00 it leaves 2 pods: c00 stops hosting the shape, and
    # 4 + 7 = 11 GPUs are fragmented. On z0c1h0 or z0c1h1 (3 → 1) c00 keeps hosting and c01 has 5 fragmented.
    view_ = cluster(USED, SHAPE)
    request = gang(group("w", 1, gpus=2))
    result = solve(request, view_)
    assert result.status == Status.PLACED and violations(request, view_, result) == []
    assert set(result.assignment.values()) <= {"z0c1h0", "z0c1h1"}
    assert fragmented(view_, plan_of(request, dict(result.assignment)), request) == 5


def test_without_shapes_the_tightest_clique_is_taken() -> None:
    # The control: with no shapes there is no future-fit tier; the plan (the greedy's, which meets every tier
    # bound) takes the tightest clique, c00 (6 free against 7): the plan future-fit turns down above.
    result = solve(gang(group("w", 1, gpus=2)), cluster(USED))
    assert result.status == Status.PLACED and "future-fit" not in result.objective_parts
    assert set(result.assignment.values()) <= {"z0c0h0", "z0c0h1", "z0c0h2"}


def test_future_fit_never_outranks_the_topology_tiers() -> None:
    # c00: z0c0h0 wholly free, the rest full; c01: 3 + 2 + 0. Shape: 4 GPUs in pods of 2 (two pods): c00 hosts it
    # (4 pods), c01 just does (1 + 1). A 3-GPU pod on the free node would keep both hosting (0 fragmented); on
    # z0c1h0 it breaks c01 (2 fragmented). Breaking a wholly free node ranks above future-fit: z0c1h0 it is.
    used = {"z0c0h1": {GPU: 8}, "z0c0h2": {GPU: 8}, "z0c1h0": {GPU: 5}, "z0c1h1": {GPU: 6}, "z0c1h2": {GPU: 8}}
    view_ = cluster(used, WorkloadShape("nvlink", pod_gpus=2, gpus=4))
    request = gang(group("w", 1, gpus=3))
    result = solve(request, view_)
    assert set(result.assignment.values()) == {"z0c1h0"}
    assert fragmented(view_, plan_of(request, dict(result.assignment)), request) == 2


def test_a_gang_shape_is_its_widest_packs_level_and_pod_size() -> None:
    topology = view(hosts(zones=2)).topology
    training = gang(group("w", 4, gpus=4), packs=[pack("w", required=ZONE, preferred=CLIQUE)])
    assert shape_of(training, topology) == WorkloadShape("zone", pod_gpus=4, gpus=16)
    loose = gang(group("w", 3, gpus=2, min_replicas=2), group("cpu", 1, gpus=0))
    assert shape_of(loose, topology) == WorkloadShape("nvlink", pod_gpus=2, gpus=4)
    assert shape_of(gang(group("cpu", 2, gpus=0)), topology) is None
    # Counted: two gangs of the same shape make one shape of weight 2, listed first.
    assert shapes_of([training, loose, training], topology)[0] == WorkloadShape("zone", 4, 16, weight=2)


def test_a_preferred_gang_is_searched_domain_by_domain_and_falls_back_when_none_holds() -> None:
    # 3 × 4 GPUs preferring a clique: c01 holds them (16 free), so no whole-cluster model is needed and the plan is
    # proven best. 5 × 4 = 20 GPUs fit no clique (16 each): the whole-cluster search still places them, in two.
    cluster: ClusterView = view(hosts())
    small = gang(group("w", 3, gpus=4), packs=[pack("w", preferred=CLIQUE)])
    placed = solve(small, cluster, SolveOptions(workers=1))
    assert placed.objective_parts["optimal"] == 1 and placed.objective_parts["preferred"] == 0
    large = gang(group("w", 5, gpus=4), packs=[pack("w", preferred=CLIQUE)])
    spread = solve(large, cluster, SolveOptions(workers=1))
    assert spread.status == Status.PLACED and violations(large, cluster, spread) == []
    assert spread.objective_parts["preferred"] == 1
