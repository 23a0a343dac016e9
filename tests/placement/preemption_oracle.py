"""A brute-force preemption oracle for tiny cases: every choice of victims the gang rule allows, cheapest first,
until the preemptor's guaranteed pods fit on what is free plus what the choice frees.

Shares no code with ``placement.preemption``: the gang rule, the freed capacity and the cost key are written here
from the victims and the gangs directly; whether the preemptor fits is the placement oracle's own enumeration
(``tests/placement/oracle.py``), itself independent of the model.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from placement import ClusterView, GangRequest
from placement.preemption import Budget, Victim, VictimGang
from tests.placement.oracle import all_plans

GPU = "nvidia.com/gpu"
_LOW = -(2**63)  # no gang of the kind: below every priority, as PreemptionCost.key() has it

Choice = frozenset[str]  # victim keys


def _allowed(members: list[Victim], gang: VictimGang) -> list[Choice]:
    """The subsets of one gang's members it may lose: all or none, or (a running gang naming minimums) any subset
    that leaves each named group at least its minimum, or all it has when it lists fewer."""
    whole = frozenset(v.key for v in members)
    if gang.reserved or not gang.min_replicas:
        return [frozenset(), whole]
    found = {whole}
    for size in range(len(members) + 1):
        for subset in itertools.combinations(members, size):
            ok = True
            for group, minimum in gang.min_replicas.items():
                listed = sum(1 for v in members if v.group == group)
                lost = sum(1 for v in subset if v.group == group)
                ok = ok and listed - lost >= min(minimum, listed)
            if ok:
                found.add(frozenset(v.key for v in subset))
    return sorted(found, key=sorted)


def choices(
    victims: Sequence[Victim], gangs: Mapping[str, VictimGang], budgets: Sequence[Budget] = ()
) -> Iterator[Choice]:
    """Every choice of victims that leaves no gang below its minimums and evicts under no budget more than it
    allows."""
    keys = sorted({v.gang for v in victims})
    per_gang = [_allowed([v for v in victims if v.gang == key], gangs[key]) for key in keys]
    for combination in itertools.product(*per_gang):
        chosen: Choice = frozenset().union(*combination)
        if all(len(chosen & set(b.victims)) <= b.allowed for b in budgets):
            yield chosen


def cost_key(victims: Sequence[Victim], gangs: Mapping[str, VictimGang], chosen: Choice) -> tuple[int, ...]:
    """The cost tuple: highest priority, GPUs, gangs, pods of evicted running pods; highest priority, GPUs, gangs
    of the reservations that yield."""
    picked = [v for v in victims if v.key in chosen]
    running = [v for v in picked if not gangs[v.gang].reserved]
    held = [v for v in picked if gangs[v.gang].reserved]

    def highest(found: list[Victim]) -> int:
        return max((gangs[v.gang].priority for v in found), default=_LOW)

    def gpus(found: list[Victim]) -> int:
        return sum(v.demand.get(GPU, 0) for v in found)

    return (
        highest(running),
        gpus(running),
        len({v.gang for v in running}),
        len(running),
        highest(held),
        gpus(held),
        len({v.gang for v in held}),
    )


def guaranteed(request: GangRequest) -> GangRequest:
    return replace(request, groups=tuple(replace(g, pods=g.pods[: g.min_replicas]) for g in request.groups))


def fits(request: GangRequest, view: ClusterView, victims: Sequence[Victim], chosen: Choice) -> bool:
    """Whether the preemptor's guaranteed pods fit once the chosen victims are gone."""
    free = {node: dict(units) for node, units in view.free.items()}
    for victim in victims:
        if victim.key in chosen:
            on_node = free.setdefault(victim.node, {})
            for resource, units in victim.demand.items():
                on_node[resource] = on_node.get(resource, 0) + units
    return next(all_plans(guaranteed(request), ClusterView(view.topology, free)), None) is not None


def cheapest(
    request: GangRequest,
    view: ClusterView,
    victims: Sequence[Victim],
    gangs: Mapping[str, VictimGang],
    budgets: Sequence[Budget] = (),
) -> tuple[int, ...] | None:
    """The least cost key of any allowed choice on which the preemptor fits; ``None`` when none does. More
    victims never hurt a fit, so the choice of every victim settles feasibility (when no budget forbids it), and a
    choice inside one that did not fit is skipped."""
    if not fits(request, view, victims, frozenset(v.key for v in victims)):
        return None
    misses: list[Choice] = []
    ordered = sorted(set(choices(victims, gangs, budgets)), key=lambda c: (cost_key(victims, gangs, c), sorted(c)))
    for chosen in ordered:
        if any(chosen <= miss for miss in misses):
            continue
        if fits(request, view, victims, chosen):
            return cost_key(victims, gangs, chosen)
        misses.append(chosen)
    if budgets:
        return None  # the budgets forbid every choice that would make room
    raise AssertionError("every victim made room, so some allowed choice must")  # the choice of all is allowed
