"""End-to-end behaviour of ``solve`` for the cpsat policy: hard constraints, reasons, bad input."""

from __future__ import annotations

import pytest

from placement import POLICIES, SolveOptions, Status, solve, violations
from placement.tiers import fresh_nodes
from tests.placement.cluster import CLIQUE, GPU, HOSTNAME, ZONE, gang, group, hosts, pack, view


def nodes_of(result: object) -> set[str]:
    return set(getattr(result, "assignment").values())  # noqa: B009 - keeps the helper type-agnostic


def test_gang_fitting_only_in_one_nvlink_domain_goes_there() -> None:
    # c00 has 2×8 = 16 free GPUs; c01 lost 10 to other pods (6 free). 12 GPUs in one clique: only c00 holds them.
    cluster = view(hosts(), used={"z0c1h0": {GPU: 6}, "z0c1h1": {GPU: 4}})
    request = gang(group("w", 3, gpus=4), packs=[pack("w", required=CLIQUE)])
    result = solve(request, cluster)
    assert result.status == Status.PLACED
    assert violations(request, cluster, result) == []
    assert nodes_of(result) <= {"z0c0h0", "z0c0h1"}
    assert result.placement_score == 1.0
    assert result.objective_parts["optimal"] == 1 and result.bound == result.placement_score


def test_gang_fitting_nowhere_names_the_closest_domain() -> None:
    # Needs 4×4 = 16 GPUs in one clique; c00 has 16−4 = 12 free, c01 has 16−8 = 8: c00 is closest, 4 short.
    cluster = view(hosts(), used={"z0c0h0": {GPU: 4}, "z0c1h0": {GPU: 8}})
    request = gang(group("w", 4, gpus=4), packs=[pack("w", required=CLIQUE)])
    result = solve(request, cluster)
    assert result.status == Status.INFEASIBLE
    assert result.assignment == {}
    assert CLIQUE in result.reason and "c00" in result.reason and "4 short" in result.reason


def test_every_resource_is_a_capacity() -> None:
    # GPUs are plentiful but each node has CPU for only one 40-core pod: three pods need three nodes.
    cluster = view(hosts(cliques=2, per_clique=2, cpu=64_000))
    request = gang(group("w", 3, gpus=1, cpu=40_000))
    result = solve(request, cluster)
    assert result.status == Status.PLACED
    assert violations(request, cluster, result) == []
    assert len(nodes_of(result)) == 3


def test_eligibility_is_respected_and_explained() -> None:
    cluster = view(hosts())
    allowed = {"z0c1h1"}
    ok = gang(group("w", 2, gpus=4, eligible=allowed))
    result = solve(ok, cluster)
    assert nodes_of(result) == allowed
    too_many = gang(group("w", 3, gpus=4, eligible=allowed))
    refused = solve(too_many, cluster)
    assert refused.status == Status.INFEASIBLE
    assert "group w" in refused.reason and "1 eligible nodes" in refused.reason


def test_required_pack_per_group_lets_groups_sit_in_different_domains() -> None:
    # Each group needs a whole clique (16 GPUs); they cannot share one, but each may have its own.
    cluster = view(hosts(cliques=2))
    request = gang(
        group("a", 2, gpus=8), group("b", 2, gpus=8), packs=[pack("a", required=CLIQUE), pack("b", required=CLIQUE)]
    )
    result = solve(request, cluster)
    assert result.status == Status.PLACED
    assert violations(request, cluster, result) == []
    gang_wide = gang(group("a", 2, gpus=8), group("b", 2, gpus=8), packs=[pack("a", "b", required=CLIQUE)])
    assert solve(gang_wide, cluster).status == Status.INFEASIBLE


def test_nodes_without_the_required_label_cannot_host_the_scope() -> None:
    specs = hosts(cliques=1, per_clique=2)
    bare = type(specs[0])("bare", {HOSTNAME: "bare", ZONE: "z0"}, {GPU: 8, "cpu": 64_000})
    cluster = view([*specs, bare])
    request = gang(group("w", 3, gpus=8), packs=[pack("w", required=CLIQUE)])
    result = solve(request, cluster)
    assert result.status == Status.INFEASIBLE


def test_min_replicas_guaranteed_extras_best_effort() -> None:
    # 4 nodes × 8 GPUs = 32; 5 pods of 8 GPUs with min 3: the 3 guaranteed always fit, 2 extras cannot both.
    cluster = view(hosts())
    request = gang(group("w", 5, gpus=8, min_replicas=3))
    result = solve(request, cluster)
    assert result.status == Status.PLACED
    assert violations(request, cluster, result) == []
    assert 3 <= len(result.assignment) <= 4


@pytest.mark.parametrize("policy", list(POLICIES))
def test_every_policy_returns_a_sound_result(policy: str) -> None:
    cluster = view(hosts(zones=2), used={"z0c0h0": {GPU: 5}, "z1c1h1": {GPU: 3}})
    request = gang(group("lead", 1, gpus=1, cpu=1000), group("w", 6, gpus=4), packs=[pack("lead", "w", required=ZONE)])
    result = solve(request, cluster, SolveOptions(policy=policy))
    partial = policy in ("first-fit", "spread")
    blind = policy in ("first-fit", "spread", "gang-best-fit")
    assert violations(request, cluster, result, partial_ok=partial, packs_ok=blind) == []
    assert result.solve_seconds > 0


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        pytest.param(gang(group("w", 2, min_replicas=3)), "minReplicas", id="min-above-pods"),
        pytest.param(gang(group("w", 1), group("w", 1)), "unique", id="duplicate-group"),
        pytest.param(gang(group("w", 1), packs=[pack("nope", required=CLIQUE)]), "packs[0].groups", id="bad-pack"),
    ],
)
def test_malformed_requests_are_refused_with_the_field(request_: object, field: str) -> None:
    result = solve(request_, view(hosts()))  # type: ignore[arg-type]
    assert result.status == Status.INVALID
    assert field in result.reason


def test_unknown_policy_is_invalid() -> None:
    result = solve(gang(group("w", 1)), view(hosts()), SolveOptions(policy="magic"))
    assert result.status == Status.INVALID and "options.policy" in result.reason


def test_a_greedy_plan_at_the_coarse_bound_is_proven_without_the_exact_refinement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two NVLink domains, one partly used: the gang of 8 × 1 GPU fills the partly used node's 4 free GPUs and
    # breaks one fresh node beside it, the coarse bound's value, so the plan is proven optimal before any set of
    # domains is enumerated.
    refined: list[int] = []
    original = fresh_nodes._by_set
    monkeypatch.setattr(fresh_nodes, "_by_set", lambda *a, **k: refined.append(1) or original(*a, **k))
    used = view(hosts(cliques=2), used={"z0c0h0": {GPU: 4}})
    result = solve(gang(group("w", 8, gpus=1)), used)
    assert result.status is Status.PLACED and result.bound == result.placement_score == 1.0
    assert sorted(result.assignment.values()) == ["z0c0h0"] * 4 + ["z0c0h1"] * 4
    assert result.objective_parts["optimal"] == 1 and not refined
