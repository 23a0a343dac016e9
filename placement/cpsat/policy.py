"""The ``cpsat`` policy: relaxation check, greedy hint, then the model only when the hint is not provably best.

Order of work, cheapest first: capacity sums (an instant, explained refusal), the tier lower bounds, the
topology greedy plan (if it meets every bound it is optimal and the model is skipped), and finally the CP-SAT
model seeded with that plan, bounded by the time limit. A time-out with a greedy plan in hand still places the
gang (the plan is valid; ``gap`` in ``objective_parts`` says how far from proven).
"""

from __future__ import annotations

from placement.bounds import gang_bounds
from placement.cpsat.solver import solve_model
from placement.explain import explain_infeasible, relaxation_reason
from placement.greedy.topology_greedy import topology_greedy
from placement.objective import evaluate
from placement.outcome import planned, refused
from placement.problem import Problem
from placement.request import Result, SolveOptions, Status

__all__ = ["solve_cpsat"]


def solve_cpsat(problem: Problem, options: SolveOptions) -> Result:
    reason = relaxation_reason(problem)
    bounds = gang_bounds(problem) if reason is None else None
    if reason is not None or bounds is None:
        return refused(reason or explain_infeasible(problem))
    hint = topology_greedy(problem)
    if hint is not None and evaluate(problem, hint) == bounds.lexicographic:
        return planned(problem, hint, bounds=bounds.per_tier, solver={"gap": 0.0, "greedy-proven": 1.0})
    outcome = solve_model(
        problem, hint=hint, lower=bounds.per_tier, time_limit=options.time_limit_seconds, workers=options.workers
    )
    if outcome.state == "infeasible":
        return refused(explain_infeasible(problem))
    if outcome.state == "unknown":
        if hint is not None:
            return planned(problem, hint, bounds=bounds.per_tier, solver={"greedy-proven": 0.0})
        return refused(
            f"no plan found within {options.time_limit_seconds:g}s and none ruled out; {explain_infeasible(problem)}",
            status=Status.TIMED_OUT,
        )
    assert outcome.objective is not None and outcome.bound is not None
    return planned(
        problem,
        outcome.counts,
        bounds=bounds.per_tier,
        solver={"gap": outcome.objective - outcome.bound, "greedy-proven": 0.0},
        bound=outcome.bound,
    )
