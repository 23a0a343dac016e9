"""Lower bounds on the batch's best-fit tiers (``fresh:<level>``, ``fresh:host``) that know the gangs of the head
share the partly used room.

Each gang's own bound on such a tier (wholly free NVLink domains, or nodes, it must break into, judged against the
capacity the batch began with) assumes it alone may use every partly used domain or node. Summed over sixteen
gangs that is a bound no plan meets once the partly used room holds fewer than all of them, so a batch could
never prove its plan and ran its model to the time limit. Here the gangs whose own bound is 0 are counted
together. In a plan that starts every gang, a set S of them that breaks no wholly free unit (domain or node) puts
each gang of S wholly in partly used units, so

- per resource, the needs of S add up to at most the partly used units' free room: the smallest needs first give
  the most gangs that can fit;
- a gang of S confined to one unit (a gang whose span bound at the domain level is 1, once every tier above is at
  its bound, as a lexicographic bound may assume; a gang of one pod, for nodes) lies in one partly used unit, so
  per unit at most as many of those gangs as the smallest needs fill its room.

Every other of those gangs breaks at least one wholly free unit. The room counts every node of a unit, candidate
or not, and a domain's node boundaries are ignored: both can only raise the room, so the bound stays a bound.
Gangs are counted apart per primary resource (what makes a unit wholly free); capacity they share across
primaries is ignored, which again can only lower the bound.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from placement.arrays import Ints
from placement.batch.queue import Queued
from placement.objective import tier_names
from placement.problem import Problem

__all__ = ["fresh_domains_bound", "fresh_nodes_bound"]


def fresh_domains_bound(gangs: Sequence[Queued]) -> int:
    """A lower bound on the sum over ``gangs`` (all of them started) of the wholly free domains at the fresh level
    each breaks, given every tier above at its bound; at least the sum of the gangs' own. 0 without the level."""
    units = _count(gangs, tier=lambda p: f"fresh:{p.fresh_level}" if p.fresh_level else None, single=_one_domain)
    return units.total + sum(len(m) - _most_in_partly_used(p, m, domains=True) for p, m in units.alone.values())


def fresh_nodes_bound(gangs: Sequence[Queued]) -> int:
    """A lower bound on the sum over ``gangs`` (all of them started) of the wholly free nodes each breaks; at least
    the sum of the gangs' own."""
    units = _count(gangs, tier=lambda _: "fresh:host", single=lambda p, _: p.guaranteed_pods == 1)
    return units.total + sum(len(m) - _most_in_partly_used(p, m, domains=False) for p, m in units.alone.values())


@dataclass
class _Member:
    needs: dict[str, int]  # guaranteed units per resource
    single: bool  # confined to one unit


@dataclass
class _Units:
    total: int = 0  # the gangs' own bounds, summed
    alone: dict[str, tuple[Problem, list[_Member]]] = field(default_factory=dict)  # primary → gangs bounded at 0


def _one_domain(problem: Problem, found: dict[str, int]) -> bool:
    return found[f"span:{problem.fresh_level}"] == 1


def _count(
    gangs: Sequence[Queued],
    *,
    tier: Callable[[Problem], str | None],
    single: Callable[[Problem, dict[str, int]], bool],
) -> _Units:
    """The gangs' own bounds on ``tier`` (its name for a problem, ``None`` when it has none) summed, and the
    gangs bounded at 0 by primary resource; ``single``: whether a gang is confined to one unit."""
    units = _Units()
    for gang in gangs:
        problem = gang.problem
        name = tier(problem)
        if name is None:
            continue
        found = dict(zip(tier_names(problem), gang.bounds.per_tier, strict=True))
        units.total += found[name]
        needs = {r: sum(g.min * g.demand.get(r, 0) for g in problem.groups) for r in problem.resources}
        needs = {r: amount for r, amount in needs.items() if amount > 0}
        if found[name] == 0 and needs:
            member = _Member(needs, single(problem, found))
            units.alone.setdefault(problem.primary, (problem, []))[1].append(member)
    return units


def _most_in_partly_used(problem: Problem, members: list[_Member], *, domains: bool) -> int:
    """How many of ``members`` (gangs of ``problem``'s primary resource, on its view) could at most break no
    wholly free unit together: domains at the fresh level, or nodes."""
    hosts = problem.hosts
    if domains:
        assert problem.fresh_level is not None
        ids, names = hosts.level(problem.fresh_level)
        fresh = problem.fresh_domains
        partly = np.fromiter((name not in fresh for name in names), np.bool_, len(names))
    else:
        ids = np.arange(len(hosts.names))
        partly = ~problem.host_fresh
    single = [m.needs for m in members if m.single]
    most = len(members)
    per_unit = np.full(len(partly), len(single), np.int64)
    for resource in sorted({r for m in members for r in m.needs}):
        free = np.maximum(hosts.free_of(resource), 0)
        room = np.where(partly, np.bincount(ids, weights=free, minlength=len(partly)), 0).astype(np.int64)
        most = min(most, int(_fill([m.needs.get(resource, 0) for m in members], room.sum(keepdims=True))[0]))
        per_unit = np.minimum(per_unit, _fill([needs.get(resource, 0) for needs in single], room))
    if single:
        most = min(most, min(int(per_unit.sum()), len(single)) + len(members) - len(single))
    return most


def _fill(needs: list[int], room: Ints) -> Ints:
    """Per entry of ``room``: the most of ``needs`` that add up to at most it (the smallest first)."""
    if not needs:
        return np.zeros(len(room), np.int64)
    filled = np.cumsum(np.sort(np.asarray(needs, np.int64)))
    return np.searchsorted(filled, room, side="right").astype(np.int64)
