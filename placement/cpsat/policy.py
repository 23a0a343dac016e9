"""The ``cpsat`` policy: prune, check, bound, greedy, and only then the model, one domain at a time.

Order of work, cheapest first:

1. prune nodes in required-pack domains too small for the scope (exact);
2. capacity sums: an instant, explained refusal when they rule the gang out;
3. the lexicographic tier bounds, and the topology-greedy plan: if the plan meets the bound it is optimal and
   no model is built (the common case on a lightly fragmented cluster);
4. otherwise CP-SAT, seeded with the greedy plan and told the bound (so it stops the moment it meets it).
   When the gang has a gang-wide required pack, every plan lies in one domain of its key, so the domains are
   solved one by one, best bound first, each a small model, and the search stops once no remaining domain's
   bound can beat the best plan found (branch and bound over domains).

A time-out with a plan in hand still places the gang (the plan is valid); ``objective_parts["optimal"]`` says
whether it was proven best.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from placement.bounds import Bounds, gang_bounds
from placement.cpsat.solver import solve_model
from placement.explain import explain_infeasible, relaxation_reason
from placement.extras import add_extras
from placement.greedy.topology_greedy import topology_greedy
from placement.objective import Counts, evaluate
from placement.outcome import planned, refused
from placement.problem import Problem
from placement.prune import prune
from placement.request import Result, SolveOptions, Status

__all__ = ["solve_cpsat"]


@dataclass(frozen=True)
class _Plan:
    """A guaranteed-pods plan before extras: its counts, the tier bounds it is scored against, solver figures."""

    counts: Counts
    bounds: tuple[int, ...]
    optimal: bool
    models: int


def solve_cpsat(problem: Problem, options: SolveOptions) -> Result:
    """Plan the guaranteed pods (the model never sees the extras), then add extras where they fit.

    When there are extras, first try to plan every pod as if all were guaranteed: if that fits, the whole gang
    is packed together (extras added afterwards would have to go wherever the guaranteed plan left room).
    """
    deadline = time.perf_counter() + options.time_limit_seconds
    if any(g.extras for g in problem.groups):
        whole = problem.requiring([len(g.pods) for g in problem.groups])
        attempt = replace(options, time_limit_seconds=options.time_limit_seconds / 2)
        everything = _solve_guaranteed(whole, attempt)
        if isinstance(everything, _Plan):
            solver = {"optimal": float(everything.optimal), "models": float(everything.models)}
            return planned(problem, everything.counts, solver=solver)
        options = replace(options, time_limit_seconds=max(0.01, deadline - time.perf_counter()))
    found = _solve_guaranteed(problem.guaranteed(), options)
    if isinstance(found, Result):
        return found
    counts = add_extras(problem, found.counts)
    solver = {"optimal": float(found.optimal), "models": float(found.models)}
    return planned(problem, counts, bounds=found.bounds, solver=solver)


def _solve_guaranteed(problem: Problem, options: SolveOptions) -> _Plan | Result:
    deadline = time.perf_counter() + options.time_limit_seconds
    reason = relaxation_reason(problem)
    if reason is not None:
        return refused(reason)
    whole, problem = problem, prune(problem)
    bounds = gang_bounds(problem)  # None when no domain holds the gang on capacity sums
    if bounds is None:
        return refused(explain_infeasible(whole))  # reasons speak of the cluster as the user sees it
    if bounds.by_domain:
        return _by_domain(problem, bounds, deadline=deadline, options=options)
    hint = topology_greedy(problem)
    if hint is not None and evaluate(problem, hint) == bounds.lexicographic:
        return _Plan(hint, bounds.per_tier, optimal=True, models=0)
    outcome = solve_model(problem, hint=hint, lower=bounds.lexicographic, deadline=deadline, workers=options.workers)
    if outcome.state == "infeasible":
        return refused(explain_infeasible(problem))
    if outcome.state == "unknown":
        return _timed_out(problem, hint, bounds, options, models=1)
    optimal = outcome.state == "optimal" or evaluate(problem, outcome.counts) == bounds.lexicographic
    return _Plan(outcome.counts, bounds.per_tier, optimal=optimal, models=1)


def _timed_out(
    problem: Problem, hint: Counts | None, bounds: Bounds, options: SolveOptions, *, models: int
) -> _Plan | Result:
    if hint is not None:
        return _Plan(hint, bounds.per_tier, optimal=False, models=models)
    return refused(
        f"no plan found within {options.time_limit_seconds:g}s and none ruled out; {explain_infeasible(problem)}",
        status=Status.TIMED_OUT,
    )


def _by_domain(problem: Problem, bounds: Bounds, *, deadline: float, options: SolveOptions) -> _Plan | Result:
    assert bounds.by_domain is not None
    scope = next(s for s in problem.required if len(s.groups) == len(problem.groups))
    best: tuple[tuple[int, ...], Counts] | None = None
    proven = True
    models = 0
    for value, bound in sorted(bounds.by_domain.items(), key=lambda item: item[1]):
        if best is not None and bound >= best[0]:
            break  # neither this domain nor any later one (sorted by bound) can beat the best plan
        if deadline - time.perf_counter() <= 0:
            proven = False
            break
        sub = problem.restricted({n for n in problem.nodes if problem.key_value(n, scope.key) == value})
        sub_hint = topology_greedy(sub)
        if sub_hint is not None and evaluate(sub, sub_hint) == bound:
            found: Counts | None = sub_hint
        else:
            outcome = solve_model(sub, hint=sub_hint, lower=bound, deadline=deadline, workers=options.workers)
            models += 1
            proven = proven and outcome.state in ("optimal", "infeasible")
            found = outcome.counts if outcome.state in ("optimal", "feasible") else sub_hint
        if found is not None and (best is None or evaluate(problem, found) < best[0]):
            best = (evaluate(problem, found), found)
    if best is None:
        if proven:
            return refused(explain_infeasible(problem))
        return _timed_out(problem, None, bounds, options, models=models)
    return _Plan(best[1], bounds.per_tier, optimal=proven or best[0] == bounds.lexicographic, models=models)
