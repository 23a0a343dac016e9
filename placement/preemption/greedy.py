"""The KAI-like baseline the benchmark compares the victim model against, and the model's first hint.

Victim gangs are taken in turn, reservations before any running gang (yielding costs nothing that runs), then
lowest priority first, then smallest (fewest listed members), then by key. Of each gang, first only its members
above its minimums, then the whole gang; the first choice on which the preemptor fits is the answer. Victims chosen
on the way that turn out useless stay chosen, as KAI's victim walk keeps them: that is the point of comparison.
The fit check is :func:`placement.solve` itself, on the view with the chosen victims gone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from placement.preemption.pool import VictimPool
from placement.preemption.request import Budget, Preemption, Victim, VictimGang
from placement.problem import InvalidRequest, check_options, check_request
from placement.request import ClusterView, GangRequest, SolveOptions, Status
from placement.solve import solve

__all__ = ["greedy_choice", "greedy_preemption", "guaranteed_request", "resolve"]

# All-or-nothing policies that keep required packs: a fit they report is a plan the preemptor may take.
_SOUND_POLICIES = ("cpsat", "topology-greedy")


def greedy_preemption(
    request: GangRequest,
    view: ClusterView,
    victims: Sequence[Victim],
    gangs: Mapping[str, VictimGang],
    options: SolveOptions | None = None,
    *,
    budgets: Sequence[Budget] = (),
) -> Preemption:
    """The greedy's victims and the preemptor's guaranteed pods on what they free. Never raises for bad input."""
    options = options or SolveOptions()
    started = options.clock()
    try:
        pool = resolve(request, view, victims, gangs, options, budgets=budgets)
    except InvalidRequest as error:
        return Preemption(Status.INVALID, reason=str(error), solve_seconds=options.clock() - started)
    return replace(greedy_choice(request, view, pool, options), solve_seconds=options.clock() - started)


def resolve(
    request: GangRequest,
    view: ClusterView,
    victims: Sequence[Victim],
    gangs: Mapping[str, VictimGang],
    options: SolveOptions,
    *,
    budgets: Sequence[Budget] = (),
) -> VictimPool:
    """Check everything a preemption plan is handed; raise :class:`InvalidRequest` naming the field."""
    if options.policy not in _SOUND_POLICIES:
        raise InvalidRequest(
            f"options.policy must be one of {', '.join(_SOUND_POLICIES)} for preemption (a fit must keep the gang "
            f"whole and its required packs); got {options.policy!r}"
        )
    check_options(options)
    check_request(request)
    return VictimPool.resolve(request, view, victims, gangs, budgets)


def guaranteed_request(request: GangRequest) -> GangRequest:
    """The request cut down to each group's ``minReplicas`` pods: preemption makes room for those only."""
    return replace(request, groups=tuple(replace(g, pods=g.pods[: g.min_replicas]) for g in request.groups))


def greedy_choice(request: GangRequest, view: ClusterView, pool: VictimPool, options: SolveOptions) -> Preemption:
    deadline = options.clock() + options.time_limit_seconds
    guaranteed = guaranteed_request(request)
    last = None
    for tried, chosen in enumerate(_choices(pool)):
        left = deadline - options.clock()
        if left <= 0:
            return Preemption(
                Status.TIMED_OUT,
                reason=f"the greedy tried {tried} choices of victims in {options.time_limit_seconds:g}s; none fit",
            )
        last = solve(guaranteed, pool.view_with(view, chosen), replace(options, time_limit_seconds=left))
        if last.status == Status.PLACED:
            return pool.plan(chosen, last.assignment, optimal=not chosen)
        if last.status == Status.INVALID:
            return Preemption(Status.INVALID, reason=last.reason)  # the request, not the victims: none would do
    assert last is not None  # the empty choice is always tried
    status = Status.INFEASIBLE if last.status == Status.INFEASIBLE else Status.TIMED_OUT
    return Preemption(status, reason=not_even_all(pool, last.reason))


def not_even_all(pool: VictimPool, reason: str) -> str:
    """A refusal with every victim gone (that the disruption budgets allow), saying so."""
    if not pool.victims:
        return f"no victims were offered, and on what is free: {reason}"
    if pool.binding_budgets:
        names = ", ".join(name for name, covered, allowed in pool.budgets if allowed < len(covered))
        return f"not with the victims disruption budgets allow ({names}), of {len(pool.victims)}: {reason}"
    return f"not even if all {len(pool.victims)} victims made way: {reason}"


def _choices(pool: VictimPool) -> Iterator[frozenset[int]]:
    """Growing choices of victims: none, then each gang's extras and then the whole gang, in the greedy's order;
    a step that would evict more under a disruption budget than it allows is skipped."""
    chosen: frozenset[int] = frozenset()
    yield chosen
    order = sorted(
        pool.members,
        key=lambda g: (not pool.gangs[g].reserved, pool.gangs[g].priority, len(pool.members[g]), g),
    )
    for gang in order:
        extras = frozenset(pool.extras(gang)) if pool.splits(gang) else frozenset()
        for step in (extras, frozenset(pool.members[gang])):
            if step and not step <= chosen and pool.within_budgets(chosen | step):
                chosen |= step
                yield chosen
