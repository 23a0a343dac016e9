"""Turn a plan (counts per group and node) into the :class:`~placement.request.Result` every policy returns."""

from __future__ import annotations

from collections.abc import Mapping

from placement.bounds import gang_bounds, tier_bounds
from placement.objective import Counts, assignment_of, evaluate, quality_mask, tier_names
from placement.problem import Problem
from placement.request import Result, Status
from placement.score import placement_score

__all__ = ["planned", "refused"]


def planned(
    problem: Problem,
    counts: Counts,
    *,
    status: Status = Status.PLACED,
    bounds: tuple[int, ...] | None = None,
    solver: Mapping[str, float] | None = None,
    bound: float | None = None,
    reason: str = "",
) -> Result:
    """A result carrying ``counts`` as a pod → node assignment, its objective tiers and its placementScore.
    ``bounds`` are the tier bounds when the caller already has them; ``solver`` adds solver figures."""
    values = evaluate(problem, counts)
    assignment = assignment_of(problem, counts)
    placed = [0] * len(problem.groups)
    for (g, _), c in counts.items():
        placed[g] += c
    if any(n > g.min for n, g in zip(placed, problem.groups, strict=True)):
        bounds = None  # extras ran: score against the best placement of as many pods, not of the minimum
        problem = problem.requiring(placed)
    if bounds is None:
        found = gang_bounds(problem)
        # A pod-by-pod baseline may place a gang no single required domain could hold; score it against the
        # bounds without that pack.
        bounds = tier_bounds(problem) if found is None else found.per_tier
    parts: dict[str, float] = dict(zip(tier_names(problem), map(float, values), strict=True))
    parts.update(solver or {})
    scored = any(placed) or status == Status.PLACED
    score = placement_score(values, bounds, quality_mask(problem)) if scored and bounds is not None else None
    return Result(
        status=status,
        assignment=assignment,
        placement_score=score,
        objective_parts=parts,
        bound=bound,
        reason=reason,
    )


def refused(reason: str, *, status: Status = Status.INFEASIBLE) -> Result:
    return Result(status=status, reason=reason)
