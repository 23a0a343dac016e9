"""Property tests: on tiny random clusters with random victim gangs, the victim model agrees with a brute-force
oracle (``tests/placement/preemption_oracle.py``).

- ``plan_preemption`` places the gang if and only if some choice of victims the gang rule allows makes room;
- its cost is the oracle's least when it says the plan is optimal (on cases this small, it always is);
- the model on its own (no greedy hint, no shortcut) reaches the same least cost or proves there is none;
- the greedy baseline places the gang exactly when the model does and never costs less;
- every result passes ``preemption_violations``.
"""

from __future__ import annotations

import time

from hypothesis import event, given, settings
from hypothesis import strategies as st

from placement import ClusterView, GangRequest, GroupRequest, PackScope, SolveOptions, Status
from placement.preemption import (
    Budget,
    Victim,
    VictimGang,
    greedy_preemption,
    plan_preemption,
    preemption_violations,
)
from placement.preemption.greedy import resolve
from placement.preemption.model import solve_victims
from placement.problem import prepare
from tests.placement.preemption_oracle import cheapest
from topology import HostSpec, Topology

CLIQUE = "nvidia.com/gpu.clique"
HOSTNAME = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
PREEMPTOR_PRIORITY = 10

Case = tuple[GangRequest, ClusterView, list[Victim], dict[str, VictimGang]]


@st.composite
def victim_gangs(draw: st.DrawFn, nodes: list[str]) -> tuple[list[Victim], dict[str, VictimGang]]:
    """1-4 gangs, at most 8 victims: running gangs naming minimums (sometimes more than they list, sometimes for
    one group only), pods of no gang, reservations."""
    victims: list[Victim] = []
    gangs: dict[str, VictimGang] = {}
    for g in range(draw(st.integers(1, 4))):
        key = f"v/g{g}"
        kind = draw(st.sampled_from(["running", "solo", "reserved"]))
        priority = draw(st.integers(0, 3))
        if kind == "solo":
            sizes = {"": 1}
        else:
            sizes = {f"w{i}": draw(st.integers(1, 3)) for i in range(draw(st.integers(1, 2)))}
        minimums: dict[str, int] = {}
        if kind != "solo":
            for group, size in sizes.items():
                if draw(st.booleans()) or len(sizes) == 1:
                    minimums[group] = draw(st.integers(0, size + 1))
        gangs[key] = VictimGang(key, priority, minimums, reserved=kind == "reserved")
        for group, size in sizes.items():
            for i in range(size):
                if len(victims) == 8:
                    break
                demand = {GPU: draw(st.sampled_from([1, 2, 4]))}
                if draw(st.booleans()):
                    demand["cpu"] = 1000
                victims.append(Victim(f"{key}-{group}-{i}", draw(st.sampled_from(nodes)), demand, key, group))
    return victims, {key: gang for key, gang in gangs.items() if any(v.gang == key for v in victims)}


@st.composite
def preemption_cases(draw: st.DrawFn) -> Case:
    count = draw(st.integers(2, 4))
    nodes = [f"n{i}" for i in range(count)]
    victims, gangs = draw(victim_gangs(nodes))
    specs = []
    free = {}
    for name in nodes:
        labels = {HOSTNAME: name}
        clique = draw(st.sampled_from(["c0", "c1", None]))
        if clique:
            labels[CLIQUE] = clique
        allocatable = {GPU: draw(st.sampled_from([4, 8])), "cpu": 4000}
        specs.append(HostSpec(name, labels, allocatable))
        # What is free now: at most what the victims leave, less what other pods hold; often nothing, so that the
        # preemptor needs victims more often than not.
        free[name] = {}
        for resource, units in allocatable.items():
            held = sum(v.demand.get(resource, 0) for v in victims if v.node == name)
            free[name][resource] = draw(st.just(0) | st.integers(0, max(0, units - held)))
    groups = []
    for g in range(draw(st.integers(1, 2))):
        pods = draw(st.integers(1, 3))
        demand = {GPU: draw(st.sampled_from([1, 2, 4]))}
        if draw(st.booleans()):
            demand["cpu"] = 1000
        eligible = draw(st.none() | st.frozensets(st.sampled_from(nodes), min_size=1))
        keys = tuple(f"ns/p{g}-{i}" for i in range(pods))
        groups.append(GroupRequest(f"p{g}", keys, demand, draw(st.integers(1, min(pods, 2))), eligible))
    names = [group.name for group in groups]
    packs = draw(
        st.lists(
            st.builds(
                PackScope,
                st.lists(st.sampled_from(names), min_size=1, unique=True).map(tuple),
                st.sampled_from([CLIQUE, HOSTNAME]),
            ),
            max_size=1,
        )
    )
    request = GangRequest("ns", "preemptor", tuple(groups), tuple(packs), priority=PREEMPTOR_PRIORITY)
    return request, ClusterView(Topology(specs), free), victims, gangs


@settings(max_examples=80, deadline=None)
@given(preemption_cases())
def test_the_plan_matches_the_oracle_and_the_greedy_never_beats_it(case: Case) -> None:
    request, view, victims, gangs = case
    least = cheapest(request, view, victims, gangs)
    options = SolveOptions(time_limit_seconds=10)
    result = plan_preemption(request, view, victims, gangs, options)
    assert preemption_violations(request, view, victims, gangs, result) == []
    greedy = greedy_preemption(request, view, victims, gangs, options)
    assert preemption_violations(request, view, victims, gangs, greedy) == []
    assert greedy.status == result.status  # the greedy ends with every victim chosen, so it misses no fit
    chose = "victims" if result.evicted or result.yielded else "no victims"
    event(f"{result.status}, {chose}, greedy {'costlier' if greedy.cost > result.cost else 'as cheap'}")
    if least is None:
        assert result.status == Status.INFEASIBLE and result.reason
        return
    assert result.status == Status.PLACED, result.reason
    assert result.optimal
    assert result.cost.key() == least
    assert result.cost <= greedy.cost


@settings(max_examples=50, deadline=None)
@given(preemption_cases())
def test_the_model_alone_matches_the_oracle(case: Case) -> None:
    """The victim model with no greedy hint: the plan often settles a case before building it (nothing to evict,
    or cpsat proved no choice fits), so the model itself is checked here."""
    request, view, victims, gangs = case
    least = cheapest(request, view, victims, gangs)
    options = SolveOptions(time_limit_seconds=10)
    pool = resolve(request, view, victims, gangs, options)
    problem = prepare(request, pool.view_with(view, range(len(victims)))).guaranteed()
    choice = solve_victims(problem, pool, free=view.free, hint=None, deadline=time.perf_counter() + 10, options=options)
    if least is None:
        assert choice.state == "infeasible"
        return
    assert choice.state == "optimal"
    assert pool.outcome(choice.chosen)[2].key() == least


@st.composite
def budgeted_cases(draw: st.DrawFn) -> tuple[Case, list[Budget]]:
    """A case and one or two disruption budgets over some of its running victims, allowing from none to all."""
    case = draw(preemption_cases())
    running = [v.key for v in case[2] if not case[3][v.gang].reserved]
    budgets = []
    for b in range(draw(st.integers(1, 2)) if running else 0):
        covered = draw(st.lists(st.sampled_from(running), min_size=1, unique=True))
        budgets.append(Budget(f"pdb-{b}", tuple(covered), draw(st.integers(0, len(covered)))))
    return case, budgets


@settings(max_examples=60, deadline=None)
@given(budgeted_cases())
def test_disruption_budgets_hold_and_the_plan_is_still_the_least_cost_choice(found: tuple[Case, list[Budget]]) -> None:
    (request, view, victims, gangs), budgets = found
    least = cheapest(request, view, victims, gangs, budgets)
    options = SolveOptions(time_limit_seconds=10)
    result = plan_preemption(request, view, victims, gangs, options, budgets=budgets)
    assert preemption_violations(request, view, victims, gangs, result, budgets=budgets) == []
    greedy = greedy_preemption(request, view, victims, gangs, options, budgets=budgets)
    assert preemption_violations(request, view, victims, gangs, greedy, budgets=budgets) == []
    event(f"{result.status}, budgets binding: {any(b.allowed < len(b.victims) for b in budgets)}")
    if least is None:
        assert result.status == Status.INFEASIBLE and result.reason
        assert greedy.status != Status.PLACED
        return
    assert result.status == Status.PLACED, result.reason
    assert result.cost.key() == least
    if greedy.status == Status.PLACED:
        assert result.cost <= greedy.cost
