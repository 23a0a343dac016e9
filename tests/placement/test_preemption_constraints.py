"""Each constraint module of the victim model on its own: a choice of victims it lets through and one it refuses.

The model is built with only the constraint under test (and, for freed capacity, the preemptor's minReplicas, so
its pods must go somewhere); the victims chosen are fixed, and the solver's verdict is checked. The refused cases
are also shown solvable without the module, so it is that module that refuses them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ortools.sat.python import cp_model

from placement.cpsat.min_replicas import add_min_replicas
from placement.preemption import Budget
from placement.preemption.budgets import add_budgets
from placement.preemption.freed_capacity import add_freed_capacity
from placement.preemption.gang_rule import add_gang_rule
from placement.preemption.pool import VictimPool
from placement.preemption.victim_vars import VictimVars
from placement.problem import prepare
from tests.placement.cluster import gang, group, hosts
from tests.placement.victim_builders import (
    VictimGangBuilder,
    busy_view,
    preemptor,
    reserved,
    running,
    solo,
    victim_set,
)

SPECS = hosts(cliques=1, per_clique=2, gpus=8)  # z0c0h0, z0c0h1
Constraint = Callable[[VictimVars], None]


def _feasible(
    builders: list[VictimGangBuilder],
    others: dict[str, int],
    chosen: set[str],
    *,
    with_module: bool,
    module: Constraint,
    pods: int,
) -> bool:
    victims, gangs = victim_set(*builders)
    view = busy_view(SPECS, victims, others)
    request = preemptor(gang(group("p", pods, gpus=8)))
    pool = VictimPool.resolve(request, view, victims, gangs)
    problem = prepare(request, pool.view_with(view, range(len(victims)))).guaranteed()
    vv = VictimVars.build(problem, pool, view.free)
    add_min_replicas(vv.placement)
    if with_module:
        module(vv)
    for i, victim in enumerate(victims):
        vv.model.add(vv.chosen[i] == int(victim.key in chosen))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    return solver.solve(vv.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


@pytest.mark.parametrize(
    ("module", "builders", "others", "pods", "chosen", "allowed"),
    [
        pytest.param(
            # 8 GPUs held by the victim, the other node full: evicting it frees the 8 the pod needs.
            add_freed_capacity,
            [solo("v/a", "z0c0h0", gpus=8, priority=0)],
            {"z0c0h1": 8},
            1,
            {"v/a"},
            True,
            id="freed-capacity-room-once-the-victim-goes",
        ),
        pytest.param(
            # Same, the victim left in place: 0 GPUs free anywhere.
            add_freed_capacity,
            [solo("v/a", "z0c0h0", gpus=8, priority=0)],
            {"z0c0h1": 8},
            1,
            set(),
            False,
            id="freed-capacity-no-room-with-the-victim-in-place",
        ),
        pytest.param(
            # Two victims of 4 GPUs on z0c0h0: one frees 4 of the 8 needed.
            add_freed_capacity,
            [solo("v/a", "z0c0h0", gpus=4, priority=0), solo("v/b", "z0c0h0", gpus=4, priority=0)],
            {"z0c0h1": 8},
            1,
            {"v/a"},
            False,
            id="freed-capacity-half-a-node-is-not-enough",
        ),
        pytest.param(
            # 3 listed, keeps 2: 1 may go.
            add_gang_rule,
            [running("v/a", priority=0).min("w", 2).pods("z0c0h0", "z0c0h0", "z0c0h1", gpus=2)],
            {},
            0,
            {"v/a-0"},
            True,
            id="gang-rule-extras-may-go",
        ),
        pytest.param(
            # 2 of 3 would leave 1, below minReplicas 2.
            add_gang_rule,
            [running("v/a", priority=0).min("w", 2).pods("z0c0h0", "z0c0h0", "z0c0h1", gpus=2)],
            {},
            0,
            {"v/a-0", "v/a-1"},
            False,
            id="gang-rule-never-below-the-minimum",
        ),
        pytest.param(
            # All 3: the gang goes whole.
            add_gang_rule,
            [running("v/a", priority=0).min("w", 2).pods("z0c0h0", "z0c0h0", "z0c0h1", gpus=2)],
            {},
            0,
            {"v/a-0", "v/a-1", "v/a-2"},
            True,
            id="gang-rule-whole-gang-may-go",
        ),
        pytest.param(
            # A group the gang names no minimum for (helper) loses its pod; w keeps both.
            add_gang_rule,
            [
                running("v/a", priority=0)
                .min("w", 2)
                .pods("z0c0h0", "z0c0h1", gpus=2)
                .pods("z0c0h0", gpus=2, group="helper")
            ],
            {},
            0,
            {"v/a-2"},
            True,
            id="gang-rule-unnamed-group-may-go",
        ),
        pytest.param(
            # A reservation yields whole: 1 of its 2 is refused.
            add_gang_rule,
            [reserved("v/r", priority=0).pods("z0c0h0", "z0c0h1", gpus=2)],
            {},
            0,
            {"v/r-0"},
            False,
            id="gang-rule-reservation-never-halved",
        ),
        pytest.param(
            add_gang_rule,
            [reserved("v/r", priority=0).pods("z0c0h0", "z0c0h1", gpus=2)],
            {},
            0,
            {"v/r-0", "v/r-1"},
            True,
            id="gang-rule-reservation-yields-whole",
        ),
        pytest.param(
            # A gang naming no minimums goes whole or not at all.
            add_gang_rule,
            [running("v/g", priority=0).pods("z0c0h0", "z0c0h1", gpus=2)],
            {},
            0,
            {"v/g-1"},
            False,
            id="gang-rule-no-minimums-never-halved",
        ),
    ],
)
def test_each_constraint_alone(
    module: Constraint,
    builders: list[VictimGangBuilder],
    others: dict[str, int],
    pods: int,
    chosen: set[str],
    allowed: bool,
) -> None:
    assert _feasible(builders, others, chosen, with_module=True, module=module, pods=pods) == allowed
    if not allowed:
        assert _feasible(builders, others, chosen, with_module=False, module=module, pods=pods), "refused elsewhere"


def _budgeted(chosen: set[str], allowed: int, *, with_module: bool) -> bool:
    """The gang v/a of 3 × 2 GPUs (it names no minimum: any member may go) under a budget allowing ``allowed``."""
    builders = [running("v/a", priority=0).min("w", 0).pods("z0c0h0", "z0c0h0", "z0c0h1", gpus=2)]
    victims, gangs = victim_set(*builders)
    view = busy_view(SPECS, victims, {})
    request = preemptor(gang(group("p", 0, gpus=8)))
    budget = Budget("pdb", tuple(v.key for v in victims), allowed)
    pool = VictimPool.resolve(request, view, victims, gangs, [budget])
    problem = prepare(request, pool.view_with(view, range(len(victims)))).guaranteed()
    vv = VictimVars.build(problem, pool, view.free)
    if with_module:
        add_budgets(vv)
    for i, victim in enumerate(victims):
        vv.model.add(vv.chosen[i] == int(victim.key in chosen))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    return solver.solve(vv.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


@pytest.mark.parametrize(
    ("chosen", "allowed", "expected"),
    [
        pytest.param({"v/a-0"}, 1, True, id="budgets-one-of-one-allowed"),
        pytest.param({"v/a-0", "v/a-1"}, 1, False, id="budgets-two-of-one-allowed"),
        pytest.param({"v/a-0", "v/a-1", "v/a-2"}, 3, True, id="budgets-all-allowed"),
        pytest.param({"v/a-2"}, 0, False, id="budgets-none-allowed"),
    ],
)
def test_disruption_budgets(chosen: set[str], allowed: int, expected: bool) -> None:
    assert _budgeted(chosen, allowed, with_module=True) is expected
    if not expected:
        assert _budgeted(chosen, allowed, with_module=False)  # it is the budget that refuses
