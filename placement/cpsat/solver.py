"""Compose the registered constraints and objective tiers into one CP-SAT model and solve it.

The tiers are lexicographic. They are folded into one weighted sum when the weights stay small (each tier's
weight is the product of the value ranges of the tiers below it, shifted by their lower bounds, so the sum
orders plans exactly as the tuple does); when the product would grow past 2**40 the tiers are solved in
chunks, each chunk's optimum fixed before the next, so coefficients never get large enough to hurt the solver.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placement.cpsat.registry import CONSTRAINTS
from placement.model_vars import ModelVars, TierExpr
from placement.objective import TIERS, Counts
from placement.problem import Problem

__all__ = ["Lexicographic", "ModelOutcome", "solve_lexicographic", "solve_model"]

_WEIGHT_LIMIT = 2**40


@dataclass
class ModelOutcome:
    """``state``: ``optimal`` (proven), ``feasible`` (time ran out with a plan), ``infeasible`` (proven),
    ``unknown`` (time ran out without a plan) or ``skipped`` (too little time left to build a model at all).
    ``objective``/``bound``: the weighted objective of the last chunk solved and the solver's proven bound on it."""

    state: str
    counts: dict[tuple[int, str], int] = field(default_factory=dict)
    objective: float | None = None
    bound: float | None = None


def _chunks(tiers: Sequence[TierExpr], lower: Sequence[int]) -> list[list[tuple[TierExpr, int]]]:
    """Split tiers (priority order) into chunks whose weights fit; each item is (tier, its lexicographic bound)."""
    chunks: list[list[tuple[TierExpr, int]]] = [[]]
    product = 1
    for tier, lo in zip(tiers, lower, strict=True):
        size = tier.upper + 1
        if chunks[-1] and product * size > _WEIGHT_LIMIT:
            chunks.append([])
            product = 1
        chunks[-1].append((tier, min(lo, tier.upper)))
        product *= size
    return chunks


def _weighted(chunk: list[tuple[TierExpr, int]]) -> tuple[cp_model.LinearExpr, int]:
    """The chunk's objective and its value at the bound vector. Weights cover each tier's whole range [0, upper],
    so the sum orders plans exactly as the tuple does, and any plan lexicographically at or above the bound
    scores at or above the bound's value: a valid constraint that lets the solver stop as soon as it meets it."""
    exprs: list[cp_model.LinearExpr] = []
    weights: list[int] = []
    floor = 0
    weight = 1
    for tier, lo in reversed(chunk):
        exprs.append(tier.expr)
        weights.append(weight)
        floor += weight * lo
        weight *= tier.upper + 1
    return cp_model.LinearExpr.weighted_sum(exprs, weights), floor


def _at_least(model: cp_model.CpModel, floor: int) -> None:
    """Tell the solver the objective is at least ``floor``, as the objective's own domain: presolve rewrites the
    objective, after which a separate ``objective >= floor`` row no longer lets it prove a plan at the floor
    optimal (a batch of 16 gangs searched its whole time limit with the plan at the floor in hand)."""
    proto = model.proto.objective
    proto.domain.clear()
    proto.domain.extend([floor - round(proto.offset), 2**62])


def solve_model(
    problem: Problem,
    *,
    hint: Counts | None,
    lower: Sequence[int] | None,
    deadline: float,
    workers: int,
    clock: Callable[[], float] = time.perf_counter,
) -> ModelOutcome:
    """Solve with ``lower`` a lexicographic bound on the tier tuple (see :mod:`placement.bounds`)."""
    mv = ModelVars.build(problem)
    for add in CONSTRAINTS.values():
        add(mv)
    tiers = [tier for family in TIERS for tier in family.model(mv)]
    keys = list(mv.count)
    decisions = [mv.count[key] for key in keys]
    if hint:
        mv.hint(hint)
    solved = solve_lexicographic(
        mv.model, tiers, lower, decisions=decisions, deadline=deadline, workers=workers, clock=clock
    )
    found = zip(keys, solved.values, strict=True) if solved.values else ()
    counts = {key: value for key, value in found if value > 0}
    return ModelOutcome(solved.state, counts, solved.objective, solved.bound)


@dataclass
class Lexicographic:
    """What :func:`solve_lexicographic` found: ``state`` as :class:`ModelOutcome`'s, the decision variables'
    values in the plan (empty without one), and the last chunk's objective and proven bound."""

    state: str
    values: list[int] = field(default_factory=list)
    objective: float | None = None
    bound: float | None = None


def solve_lexicographic(
    model: cp_model.CpModel,
    tiers: Sequence[TierExpr],
    lower: Sequence[int] | None,
    *,
    decisions: Sequence[cp_model.IntVar],
    deadline: float,
    workers: int,
    clock: Callable[[], float] = time.perf_counter,
) -> Lexicographic:
    """Minimise ``tiers`` lexicographically (priority order) within the deadline, chunk by chunk: each chunk's
    optimum is fixed before the next, whose search starts from the plan found (``decisions`` are the variables
    that make a plan; hints already on the model seed the first chunk). ``lower`` is a lexicographic bound on
    the tier tuple: while every chunk meets its part of it, the next may stop as soon as it meets its own."""
    outcome = Lexicographic("unknown")
    remaining = deadline - clock()  # measured after building: the build is part of the budget
    at_bound = lower is not None  # the bound of a later chunk holds only while every earlier chunk met its own
    chunks = _chunks(tiers, lower or [0] * len(tiers))
    for index, chunk in enumerate(chunks):
        objective, floor = _weighted(chunk)
        model.minimize(objective)
        if at_bound:
            _at_least(model, floor)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = max(remaining, 0.01)
        solver.parameters.num_workers = workers
        status = solver.solve(model)
        remaining -= solver.wall_time
        if status == cp_model.INFEASIBLE:
            return Lexicographic("infeasible")
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return outcome  # out of time: keep the previous chunk's plan, if any
        value = round(solver.objective_value)
        values = [int(solver.value(var)) for var in decisions]
        # Optimal only once the last chunk is proven: a plan whose later chunks were never minimised is not.
        proven = status == cp_model.OPTIMAL
        last = index == len(chunks) - 1
        # The objective is integral, so its bound rounds up (CP-SAT reports it as a float with LP noise).
        bound = math.ceil(solver.best_objective_bound - 1e-6)
        outcome = Lexicographic("optimal" if proven and last else "feasible", values, value, bound)
        at_bound = at_bound and value == floor
        if not proven or remaining <= 0:
            break
        # Fix this chunk at its optimum and carry the plan as the next chunk's starting point.
        model.add(objective == value)
        model.clear_hints()  # type: ignore[no-untyped-call]
        for var, found in zip(decisions, values, strict=True):
            model.add_hint(var, found)
    return outcome
