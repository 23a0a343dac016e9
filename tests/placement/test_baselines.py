"""The baseline policies behave as their namesakes would, and report partial placements as documented."""

from __future__ import annotations

from placement import SolveOptions, Status, solve, violations
from tests.placement.cluster import CLIQUE, GPU, gang, group, hosts, pack, view


def test_first_fit_reports_a_partial_gang_as_infeasible_with_the_pods_it_placed() -> None:
    # 4 nodes × 8 GPUs; 5 pods of 8 GPUs, all guaranteed: first-fit places 4, one by one, and strands them.
    cluster = view(hosts())
    request = gang(group("w", 5, gpus=8))
    result = solve(request, cluster, SolveOptions(policy="first-fit"))
    assert result.status == Status.INFEASIBLE
    assert len(result.assignment) == 4 and "got 4 of 5" in result.reason
    assert violations(request, cluster, result, partial_ok=True) == []
    assert solve(request, cluster).assignment == {}  # cpsat: all or nothing


def test_first_fit_packs_in_name_order_and_spread_spreads() -> None:
    cluster = view(hosts())
    request = gang(group("w", 4, gpus=1))
    packed = solve(request, cluster, SolveOptions(policy="first-fit"))
    assert set(packed.assignment.values()) == {"z0c0h0"}
    spread = solve(request, cluster, SolveOptions(policy="spread"))
    assert len(set(spread.assignment.values())) == 4  # least allocated: each pod on the emptiest node


def test_gang_best_fit_is_all_or_nothing_and_topology_blind() -> None:
    # Best fit takes the fullest nodes first (one per clique here), ignoring the required clique pack.
    cluster = view(hosts(), used={"z0c0h0": {GPU: 4}, "z0c1h0": {GPU: 4}})
    request = gang(group("w", 2, gpus=4), packs=[pack("w", required=CLIQUE)])
    result = solve(request, cluster, SolveOptions(policy="gang-best-fit"))
    assert set(result.assignment.values()) == {"z0c0h0", "z0c1h0"}
    assert violations(request, cluster, result, packs_ok=True) == []
    assert violations(request, cluster, result) != []  # it broke the pack: that is what the benchmark shows
    too_big = solve(gang(group("w", 9, gpus=4)), cluster, SolveOptions(policy="gang-best-fit"))
    assert too_big.status == Status.INFEASIBLE and too_big.assignment == {}


def test_topology_greedy_takes_the_tightest_domain_that_holds_the_gang() -> None:
    # 8 GPUs in one clique: c00 has 16 free, c01 only 10 (6 used): the tighter c01 is taken.
    cluster = view(hosts(), used={"z0c1h0": {GPU: 6}})
    request = gang(group("w", 2, gpus=4), packs=[pack("w", required=CLIQUE)])
    result = solve(request, cluster, SolveOptions(policy="topology-greedy"))
    assert {n[:4] for n in result.assignment.values()} == {"z0c1"}
    assert violations(request, cluster, result) == []
