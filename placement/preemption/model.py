"""Compose the victim model and solve it: the preemptor's guaranteed pods under the placement model's own hard
constraints (every one registered in :data:`placement.cpsat.registry.CONSTRAINTS` but capacity, which
:mod:`~placement.preemption.freed_capacity` replaces), the gang rule, and the cost tiers in order, minimised
lexicographically by :func:`placement.cpsat.solver.solve_lexicographic`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from placement.cpsat.registry import CONSTRAINTS
from placement.cpsat.solver import solve_lexicographic
from placement.model_vars import ModelVars
from placement.objective import Counts
from placement.preemption.budgets import add_budgets
from placement.preemption.cost_tiers import cost_tiers
from placement.preemption.freed_capacity import add_freed_capacity
from placement.preemption.gang_rule import add_gang_rule
from placement.preemption.pool import VictimPool
from placement.preemption.victim_vars import VictimVars
from placement.problem import Problem
from placement.request import SolveOptions

__all__ = ["PLACEMENT_CONSTRAINTS", "VICTIM_CONSTRAINTS", "VictimChoice", "solve_victims"]

# A constraint the placement model gains holds for a preemptor too; only capacity changes meaning here.
PLACEMENT_CONSTRAINTS: dict[str, Callable[[ModelVars], None]] = {
    name: add for name, add in CONSTRAINTS.items() if name != "capacity"
}
VICTIM_CONSTRAINTS: dict[str, Callable[[VictimVars], None]] = {
    "freed-capacity": add_freed_capacity,
    "gang-rule": add_gang_rule,
    "budgets": add_budgets,
}


@dataclass(frozen=True)
class VictimChoice:
    """``state`` as :class:`~placement.cpsat.solver.Lexicographic`'s; with a plan, the victims chosen (indices)
    and the preemptor's counts."""

    state: str
    chosen: frozenset[int] = frozenset()
    counts: Counts = field(default_factory=dict)


def solve_victims(
    problem: Problem,
    pool: VictimPool,
    *,
    free: Mapping[str, Mapping[str, int]],
    hint: tuple[Collection[int], Counts] | None,
    deadline: float,
    options: SolveOptions,
) -> VictimChoice:
    """``problem``: the preemptor's guaranteed pods on the view with every victim gone; ``free``: what is free
    now; ``hint``: a choice of victims and a plan on what it frees."""
    vv = VictimVars.build(problem, pool, free)
    for add_placement in PLACEMENT_CONSTRAINTS.values():
        add_placement(vv.placement)
    for add_victims in VICTIM_CONSTRAINTS.values():
        add_victims(vv)
    tiers = cost_tiers(vv)
    if hint is not None:
        vv.hint(*hint)
    keys = list(vv.placement.count)
    decisions = [vv.placement.count[key] for key in keys] + vv.chosen
    solved = solve_lexicographic(
        vv.model, tiers, None, decisions=decisions, deadline=deadline, workers=options.workers, clock=options.clock
    )
    if not solved.values:
        return VictimChoice(solved.state)
    counts = {key: value for key, value in zip(keys, solved.values, strict=False) if value > 0}
    chosen = frozenset(i for i, value in enumerate(solved.values[len(keys) :]) if value)
    return VictimChoice(solved.state, chosen, counts)
