"""Property tests: on small random clusters and gangs, cpsat agrees with a brute-force oracle.

- the objective the policies share (``placement.objective.evaluate``, composed from the tier modules) agrees with
  the oracle's own evaluator on every feasible plan, and the tier bounds never exceed the optimum;
- cpsat places the gang if and only if some feasible plan exists;
- its plan never breaks capacity, eligibility, required packs or minReplicas (checked by the validator);
- its plan for the guaranteed pods is as good as the oracle's best under the oracle's evaluator, and best-effort
  extras are then added until none more fits;
- every baseline's result is sound for what it promises, and no greedy plan beats the oracle.
"""

from __future__ import annotations

import time
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from placement import (
    POLICIES,
    ClusterView,
    GangRequest,
    GroupRequest,
    PackScope,
    SolveOptions,
    Status,
    WorkloadShape,
    solve,
)
from placement.bounds import gang_bounds
from placement.cpsat.solver import solve_model
from placement.objective import assignment_of, counts_of, evaluate
from placement.problem import prepare
from placement.validation import violations
from tests.placement.oracle import all_plans, feasible, plan_of, tiers, to_assignment
from topology import HostSpec, Topology

ZONE = "topology.kubernetes.io/zone"
CLIQUE = "nvidia.com/gpu.clique"
HOSTNAME = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"


@st.composite
def clusters(draw: st.DrawFn) -> ClusterView:
    count = draw(st.integers(2, 4))
    hosts = []
    free = {}
    for i in range(count):
        name = f"n{i}"
        labels = {HOSTNAME: name}
        zone = draw(st.sampled_from(["z0", "z1", None]))
        if zone:
            labels[ZONE] = zone
        clique = draw(st.sampled_from(["c0", "c1", "c2", None]))
        if clique:
            labels[CLIQUE] = clique
        gpus = draw(st.sampled_from([4, 8]))
        cpus = draw(st.sampled_from([2000, 4000]))
        hosts.append(HostSpec(name, labels, {GPU: gpus, "cpu": cpus}))
        free[name] = {GPU: draw(st.integers(0, gpus)), "cpu": draw(st.sampled_from([cpus, cpus // 2, 0]))}
    topology = Topology(hosts)
    # Half the clusters carry recent gang shapes, which adds the future-fit tier.
    levels = st.sampled_from([level.name for level in topology.levels])
    shape = st.builds(WorkloadShape, levels, st.sampled_from([1, 2, 4]), st.integers(1, 8), st.integers(1, 3))
    shapes = draw(st.none() | st.lists(shape, min_size=1, max_size=2))
    return ClusterView(topology, free, tuple(shapes or ()))


@st.composite
def gangs(draw: st.DrawFn, nodes: list[str]) -> GangRequest:
    groups = []
    for g in range(draw(st.integers(1, 2))):
        pods = draw(st.integers(1, 3))
        eligible = draw(st.none() | st.frozensets(st.sampled_from(nodes), min_size=1))
        demand = {GPU: draw(st.sampled_from([1, 2, 4]))}
        if draw(st.booleans()):
            demand["cpu"] = draw(st.sampled_from([500, 1000]))
        name = f"g{g}"
        pod_keys = tuple(f"ns/{name}-{i}" for i in range(pods))
        groups.append(GroupRequest(name, pod_keys, demand, draw(st.integers(0, pods)), eligible))
    names = [g.name for g in groups]
    keys = st.sampled_from([ZONE, CLIQUE, HOSTNAME])
    packs = draw(
        st.lists(
            st.builds(
                PackScope,
                st.lists(st.sampled_from(names), min_size=1, unique=True).map(tuple),
                st.none() | keys,
                st.none() | keys,
            ),
            max_size=2,
        )
    )
    return GangRequest("ns", "gang", tuple(groups), tuple(packs))


@st.composite
def cases(draw: st.DrawFn) -> tuple[GangRequest, ClusterView]:
    view = draw(clusters())
    return draw(gangs(sorted(view.topology.hosts))), view


def oracle_scores(request: GangRequest, view: ClusterView) -> list[tuple[int, ...]]:
    """The oracle's own evaluation of every feasible plan it enumerates."""
    return [tiers(request, view, plan) for plan in all_plans(request, view)]


def judged(request: GangRequest, view: ClusterView, assignment: dict[str, str]) -> tuple[int, ...]:
    """A solver's plan, evaluated by the oracle."""
    return tiers(request, view, plan_of(request, assignment))


def guaranteed_only(request: GangRequest) -> GangRequest:
    groups = tuple(replace(g, pods=g.pods[: g.min_replicas]) for g in request.groups)
    return replace(request, groups=groups)


def extra_fits_somewhere(request: GangRequest, view: ClusterView, assignment: dict[str, str]) -> str | None:
    """A group with an unplaced pod and a node that could still take it, if any (extras must be maximal)."""
    used: dict[str, dict[str, int]] = {}
    for pod, node in assignment.items():
        group = next(g for g in request.groups if pod in g.pods)
        for r, u in group.demand.items():
            used.setdefault(node, {}).setdefault(r, 0)
            used[node][r] += u
    for group in request.groups:
        if sum(1 for p in group.pods if p in assignment) == len(group.pods):
            continue
        for node in view.topology.hosts:
            if group.eligible is not None and node not in group.eligible:
                continue
            if any(u > view.free[node].get(r, 0) - used.get(node, {}).get(r, 0) for r, u in group.demand.items()):
                continue
            trial = {**assignment, "probe": node}
            probe = replace(group, pods=(*group.pods, "probe"))
            grown = replace(request, groups=tuple(probe if g is group else g for g in request.groups))
            if feasible(grown, view, plan_of(grown, trial)):
                return f"{group.name} on {node}"
    return None


@settings(max_examples=60, deadline=None)
@given(cases())
def test_the_shared_objective_agrees_with_the_oracles_evaluator(case: tuple[GangRequest, ClusterView]) -> None:
    request, view = case
    problem = prepare(request, view)
    for plan in all_plans(request, view):
        counts = counts_of(problem, to_assignment(request, plan))
        assert evaluate(problem, counts) == tiers(request, view, plan), plan


@settings(max_examples=60, deadline=None)
@given(cases())
def test_cpsat_matches_the_oracle(case: tuple[GangRequest, ClusterView]) -> None:
    """The guaranteed plan is optimal; extras are then added until no more fit."""
    full, view = case
    request = guaranteed_only(full)
    problem = prepare(request, view)
    scores = oracle_scores(request, view)
    bounds = gang_bounds(problem)
    if scores:
        assert bounds is not None and bounds.lexicographic <= min(scores), "bounds must never exceed the optimum"
    result = solve(request, view, SolveOptions(time_limit_seconds=5))
    if not scores:
        assert result.status == Status.INFEASIBLE, result
        assert result.reason and not result.assignment
        return
    assert result.status == Status.PLACED, (result.reason, min(scores))
    assert violations(request, view, result) == []
    assert result.objective_parts["optimal"] == 1
    assert judged(request, view, dict(result.assignment)) == min(scores)
    with_extras = solve(full, view, SolveOptions(time_limit_seconds=5))
    assert with_extras.status == Status.PLACED
    assert violations(full, view, with_extras) == []
    assert extra_fits_somewhere(full, view, dict(with_extras.assignment)) is None


@settings(max_examples=40, deadline=None)
@given(cases())
def test_baselines_are_sound_and_never_beat_the_oracle(case: tuple[GangRequest, ClusterView]) -> None:
    request, view = case
    scores = oracle_scores(request, view)
    for policy in POLICIES:
        result = solve(request, view, SolveOptions(policy=policy, time_limit_seconds=5))
        gang = policy in ("cpsat", "topology-greedy", "gang-best-fit")
        blind = policy in ("first-fit", "spread", "gang-best-fit")
        assert violations(request, view, result, partial_ok=not gang, packs_ok=blind) == [], policy
        if result.status == Status.PLACED and not blind:
            assert scores and judged(request, view, dict(result.assignment)) >= min(scores), policy
        # gang-best-fit ignores packs, so it must refuse only a gang that fits nowhere even without them
        if gang and not (oracle_scores(replace(request, packs=()), view) if blind else scores):
            assert result.status == Status.INFEASIBLE, policy


@settings(max_examples=40, deadline=None)
@given(cases())
def test_the_model_alone_matches_the_oracle(case: tuple[GangRequest, ClusterView]) -> None:
    """The CP-SAT model without the greedy shortcut, bounds or pruning: the policy often proves optimality
    before building it, so the model itself is checked here, with no hint and no lower bound."""
    full, view = case
    request = guaranteed_only(full)
    problem = prepare(request, view)
    scores = oracle_scores(request, view)
    outcome = solve_model(problem, hint=None, lower=None, deadline=time.perf_counter() + 5, workers=1)
    if not scores:
        assert outcome.state == "infeasible"
        return
    assert outcome.state == "optimal"
    assert judged(request, view, assignment_of(problem, outcome.counts)) == min(scores)
