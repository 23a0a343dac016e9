"""``plan_preemption``: the least costly choice of victims that lets the preemptor's guaranteed pods fit.

Order of work, cheapest first:

1. check the input (a malformed one is ``Invalid``, naming the field) and resolve the preemptor's guaranteed pods
   on the view with every victim gone, so candidate nodes and caps cover whatever a choice could free;
2. capacity sums on that view: an instant, explained refusal when not even every victim would make room;
3. the greedy baseline (:mod:`~placement.preemption.greedy`) within part of the time limit: a gang that fits on
   what is free needs no victims and no model;
4. otherwise the victim model (:mod:`~placement.preemption.model`), seeded with the greedy's choice; the better
   of the two is returned, so the plan is never worse than the greedy's.

The time limit covers the whole call. The objective is the cost of the victims alone: the assignment returned is
one the freed capacity allows (the greedy's, placed by ``placement.solve``, when the greedy's choice wins), not
necessarily the best placement on it; a caller that wants that solves again on the view with the victims gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from placement.explain import explain_infeasible, relaxation_reason
from placement.objective import assignment_of, counts_of
from placement.preemption.greedy import greedy_choice, not_even_all, resolve
from placement.preemption.model import solve_victims
from placement.preemption.pool import VictimPool
from placement.preemption.request import Budget, Preemption, Victim, VictimGang
from placement.problem import InvalidRequest, Problem, prepare
from placement.request import ClusterView, GangRequest, SolveOptions, Status

__all__ = ["plan_preemption"]

_GREEDY_SHARE = 0.4  # of the time limit, at most, for the greedy choice that seeds the model
_MIN_MODEL_SECONDS = 0.05  # with less time left, building the model (Python, not interruptible) only overruns


def plan_preemption(
    request: GangRequest,
    view: ClusterView,
    victims: Sequence[Victim],
    gangs: Mapping[str, VictimGang],
    options: SolveOptions | None = None,
    *,
    budgets: Sequence[Budget] = (),
) -> Preemption:
    """Which ``victims`` make way, and where the preemptor's guaranteed pods go once they have. ``view.free`` is
    what is free now, every victim still in place; ``budgets``: disruption budgets over the victims. Never raises
    for bad input."""
    options = options or SolveOptions()
    started = options.clock()
    try:
        pool = resolve(request, view, victims, gangs, options, budgets=budgets)
        everything = pool.view_with(view, range(len(pool.victims)))
        problem = prepare(request, everything, options).guaranteed()
    except InvalidRequest as error:
        return Preemption(Status.INVALID, reason=str(error), solve_seconds=options.clock() - started)
    found = _plan(request, view, pool, problem, options, deadline=started + options.time_limit_seconds)
    return replace(found, solve_seconds=options.clock() - started)


def _plan(
    request: GangRequest,
    view: ClusterView,
    pool: VictimPool,
    problem: Problem,
    options: SolveOptions,
    *,
    deadline: float,
) -> Preemption:
    reason = relaxation_reason(problem)
    if reason is not None:
        return Preemption(Status.INFEASIBLE, reason=not_even_all(pool, reason))
    greedy_options = replace(options, time_limit_seconds=options.time_limit_seconds * _GREEDY_SHARE)
    greedy = greedy_choice(request, view, pool, greedy_options)
    if greedy.status == Status.PLACED and greedy.optimal:
        return greedy  # fits on what is free: nothing to evict
    if greedy.status == Status.INFEASIBLE and options.policy == "cpsat" and not pool.binding_budgets:
        return greedy  # cpsat refuses only what it proved cannot fit, here with every victim gone
    if deadline - options.clock() < _MIN_MODEL_SECONDS:
        return greedy if greedy.status == Status.PLACED else _timed_out(options)
    hint = None
    if greedy.status == Status.PLACED:
        hint = (pool.chosen_in(greedy), counts_of(problem, greedy.assignment))
    choice = solve_victims(problem, pool, free=view.free, hint=hint, deadline=deadline, options=options)
    if choice.state == "infeasible":
        return Preemption(Status.INFEASIBLE, reason=not_even_all(pool, explain_infeasible(problem)))
    if choice.state in ("optimal", "feasible"):
        found = pool.plan(choice.chosen, assignment_of(problem, choice.counts), optimal=choice.state == "optimal")
        if greedy.status != Status.PLACED or found.cost <= greedy.cost:
            return found
    return greedy if greedy.status == Status.PLACED else _timed_out(options)


def _timed_out(options: SolveOptions) -> Preemption:
    return Preemption(
        Status.TIMED_OUT,
        reason=f"no choice of victims found within {options.time_limit_seconds:g}s and none ruled out",
    )
