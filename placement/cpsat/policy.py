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

import heapq
import logging
from dataclasses import dataclass, replace

from placement.bounds import Bounds, gang_bounds, tier_bounds
from placement.cpsat.solver import ModelOutcome, solve_model
from placement.explain import explain_infeasible, relaxation_reason
from placement.greedy.extras import add_extras
from placement.greedy.topology_greedy import topology_greedy
from placement.objective import Counts, evaluate
from placement.outcome import planned, refused
from placement.problem import Problem
from placement.prune import prune
from placement.request import FLOOR_MISMATCH, Result, SolveOptions, Status

__all__ = ["solve_cpsat"]

log = logging.getLogger(__name__)

_LATE_GREEDY_DOMAINS = 3  # past the deadline with no plan, how many more domains the greedy may try
_MIN_MODEL_SECONDS = 0.1  # with less time left, building a model (Python, not interruptible) only overruns


@dataclass(frozen=True)
class _Plan:
    """A guaranteed-pods plan before extras: its counts, the tier bounds it is scored against, solver figures."""

    counts: Counts
    bounds: tuple[int, ...]
    optimal: bool
    models: int
    mismatches: int = 0  # models infeasible under the bound while the greedy held a plan (FLOOR_MISMATCH)


def solve_cpsat(problem: Problem, options: SolveOptions) -> Result:
    """Plan the guaranteed pods (the model never sees the extras), then add extras where they fit.

    When there are extras, first try to plan every pod as if all were guaranteed: if that fits, the whole gang
    is packed together (extras added afterwards would have to go wherever the guaranteed plan left room).
    """
    deadline = options.clock() + options.time_limit_seconds
    if any(g.extras for g in problem.groups):
        whole = problem.requiring([len(g.pods) for g in problem.groups])
        attempt = replace(options, time_limit_seconds=options.time_limit_seconds / 2)
        everything = _solve_guaranteed(whole, attempt)
        if isinstance(everything, _Plan):
            solver = _figures(everything)
            return _with_bound(planned(problem, everything.counts, solver=solver), optimal=everything.optimal)
        options = replace(options, time_limit_seconds=max(0.01, deadline - options.clock()))
    found = _solve_guaranteed(problem.guaranteed(), options)
    if isinstance(found, Result):
        return found
    counts = add_extras(problem, found.counts)
    solver = _figures(found)
    return _with_bound(planned(problem, counts, bounds=found.bounds, solver=solver), optimal=found.optimal)


def _figures(plan: _Plan) -> dict[str, float]:
    figures = {"optimal": float(plan.optimal), "models": float(plan.models)}
    return figures | ({FLOOR_MISMATCH: float(plan.mismatches)} if plan.mismatches else {})


def _mismatch(problem: Problem, bound: tuple[int, ...]) -> None:
    log.warning(
        "CP-SAT found no plan at or above the bound while the greedy holds one; the greedy plan stands "
        "groups=%d nodes=%d bound=%s",
        len(problem.groups),
        len(problem.nodes),
        bound,
    )


def _with_bound(result: Result, *, optimal: bool) -> Result:
    """``Result.bound`` for cpsat: the best placementScore any plan could reach, as far as the search proved —
    the plan's own score when it is proven optimal, else 1.0 (nothing better was ruled out)."""
    return replace(result, bound=result.placement_score if optimal else 1.0)


def _solve_guaranteed(problem: Problem, options: SolveOptions) -> _Plan | Result:
    deadline = options.clock() + options.time_limit_seconds
    reason = relaxation_reason(problem)
    if reason is not None:
        return refused(reason)
    whole, problem = problem, prune(problem)
    # Coarse first: a greedy plan that meets the coarse bound is optimal (coarse ≤ exact ≤ any plan, so all three
    # are equal and so are the scores), and the exact refinement, a set enumeration, is paid only when it does not.
    bounds = gang_bounds(problem, exact_fit=False)  # None when no domain holds the gang on capacity sums
    if bounds is None:
        return refused(explain_infeasible(whole))  # reasons speak of the cluster as the user sees it
    if problem.guaranteed_pods == 0:
        # Nothing is guaranteed (every group's minimum is 0): the empty plan is optimal, and a model of nothing
        # can still run out of a tiny time budget on a loaded machine.
        return _Plan({}, bounds.per_tier, optimal=True, models=0)
    if bounds.by_domain:
        return _by_domain(problem, bounds, deadline=deadline, options=options)
    preferred = problem.preferring_one()
    if preferred is not None:
        # Search the preferred key's domains one by one, as for a required pack: cheap, exact when one holds the
        # gang; the whole-cluster model is left for the gang no single domain holds.
        packed = problem.packing(preferred)
        packed_bounds = gang_bounds(packed)
        if packed_bounds is not None and packed_bounds.by_domain:
            inside = _by_domain(packed, packed_bounds, deadline=deadline, options=options)
            if isinstance(inside, _Plan):
                # Every plan outside one domain is worse on the first tier, so the floor the domain search
                # established holds for the gang, as it does for a required pack.
                return inside
    hint = topology_greedy(problem, spans_first=True)
    value = evaluate(problem, hint) if hint is not None else None
    if value == bounds.lexicographic:
        return _Plan(hint or {}, bounds.per_tier, optimal=True, models=0)
    bounds = gang_bounds(problem) or bounds  # exact: what the model's floor and the score are held to
    if value == bounds.lexicographic:
        return _Plan(hint or {}, bounds.per_tier, optimal=True, models=0)
    outcome, exact = _model(problem, hint, bounds.lexicographic, deadline=deadline, options=options)
    if outcome.state == "infeasible" and hint is not None:
        _mismatch(problem, bounds.lexicographic)
        return _Plan(hint, bounds.per_tier, optimal=False, models=1, mismatches=1)
    if outcome.state == "infeasible" and exact:
        return refused(explain_infeasible(problem))
    found = _better(problem, outcome.counts if outcome.state in ("optimal", "feasible") else None, hint)
    models = int(outcome.state != "skipped")
    if found is None:
        return _timed_out(problem, None, bounds, options, models=models)
    optimal = (outcome.state == "optimal" and exact) or evaluate(problem, found) == bounds.lexicographic
    return _Plan(found, bounds.per_tier, optimal=optimal, models=models)


def _better(problem: Problem, *plans: Counts | None) -> Counts | None:
    """The best of the plans under the objective (CP-SAT stopped by the clock may hold a worse one than its hint)."""
    found = [p for p in plans if p is not None]
    return min(found, key=lambda p: evaluate(problem, p)) if found else None


def _model(
    problem: Problem, hint: Counts | None, lower: tuple[int, ...], *, deadline: float, options: SolveOptions
) -> tuple[ModelOutcome, bool]:
    """Solve the model, on a neighbourhood of the hint when the problem is too big to build in the time limit;
    ``exact`` says whether the model covered every candidate (else its optimum proves nothing globally)."""
    if deadline - options.clock() < _MIN_MODEL_SECONDS:
        return ModelOutcome("skipped"), False

    def run(candidates: Problem) -> ModelOutcome:
        return solve_model(
            candidates, hint=hint, lower=lower, deadline=deadline, workers=options.workers, clock=options.clock
        )

    if len(problem.nodes) <= options.model_nodes or not problem.span_levels:
        return run(problem), True
    level = problem.span_levels[0]
    members: dict[str, list[str]] = {}
    room: dict[str, int] = {}
    for node in problem.nodes:
        domain = problem.domain(node, level)
        members.setdefault(domain, []).append(node)
        room[domain] = room.get(domain, 0) + problem.free(node, problem.primary)
    # The hint's NVLink domains, then the roomiest others, up to the size a model can be built in time.
    keep = {problem.domain(n, level) for (_, n), c in (hint or {}).items() if c > 0}
    size = sum(len(members[d]) for d in keep)
    for domain in sorted(room, key=lambda d: (-room[d], d)):
        if size >= options.model_nodes:
            break
        if domain not in keep:
            keep.add(domain)
            size += len(members[domain])
    near = problem.restricted({n for d in keep for n in members[d]})
    return run(near), False


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
    """Branch and bound over the domains of the gang-wide required key, best bound first. Domain bounds start
    coarse; a domain's exact best-fit bound is computed when it reaches the front, and it is re-queued if that
    moves it back. The search stops when the front bound cannot beat the best plan."""
    assert bounds.by_domain is not None and bounds.members is not None
    scope = next(s for s in problem.required if len(s.groups) == len(problem.groups))
    # (bound, 1 if still coarse else 0, room, domain): among equal bounds a refined domain comes first, so a domain
    # that meets its bound ends the search before every other one is refined; then the tightest (least free units
    # of the primary resource), as best fit takes it: of equal plans, the one that leaves the roomy domains whole.
    primary = problem.arrays.free.get(problem.primary)
    room = {v: int(primary[idx].sum()) if primary is not None else 0 for v, idx in bounds.members.items()}
    queue = [(bound, 1, room[value], value) for value, bound in bounds.by_domain.items()]
    heapq.heapify(queue)
    best: tuple[tuple[int, ...], Counts] | None = None
    unsettled: list[tuple[int, ...]] = []  # bounds of domains whose search was cut short
    models = mismatches = 0
    tried_late = 0
    while queue:
        bound, coarse, tightness, value = queue[0]
        if best is not None and bound >= best[0]:
            break  # neither this domain nor any behind it can beat the best plan
        if coarse:
            refined = tier_bounds(problem, bounds.members[value])
            heapq.heapreplace(queue, (refined or bound, 0, tightness, value))
            continue
        heapq.heappop(queue)
        late = deadline - options.clock() <= 0
        if late and (best is not None or tried_late >= _LATE_GREEDY_DOMAINS):
            unsettled.append(bound)
            break  # out of time, with a plan in hand or after a few greedy tries
        tried_late += late
        sub = problem.restricted({n for n in problem.nodes if problem.key_value(n, scope.key) == value})
        sub_hint = topology_greedy(sub, spans_first=True)
        if sub_hint is not None and evaluate(sub, sub_hint) == bound:
            found: Counts | None = sub_hint
        elif late:
            # Past the deadline without any plan: greedy only (cheap) until one domain yields a plan.
            found = sub_hint
            unsettled.append(bound)
        else:
            outcome, exact = _model(sub, sub_hint, bound, deadline=deadline, options=options)
            models += outcome.state != "skipped"
            if outcome.state == "infeasible" and sub_hint is not None:
                _mismatch(sub, bound)
                mismatches += 1
            if not (exact and outcome.state in ("optimal", "infeasible")):
                unsettled.append(bound)
            found = _better(sub, outcome.counts if outcome.state in ("optimal", "feasible") else None, sub_hint)
        if found is not None and (best is None or evaluate(problem, found) < best[0]):
            best = (evaluate(problem, found), found)
    if best is None:
        if not unsettled:
            return refused(explain_infeasible(problem))
        return _timed_out(problem, None, bounds, options, models=models)
    # The lexicographic bound the search established: the best plan, unless a domain still queued or one whose
    # search was cut short could hold a better one. It is what placementScore measures against.
    floor = min([best[0], *unsettled, *(queue[0][:1] if queue else [])])
    return _Plan(best[1], floor, optimal=floor == best[0], models=models, mismatches=mismatches)
