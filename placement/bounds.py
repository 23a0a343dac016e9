"""Lower bounds on each objective tier, from free capacity alone (no search).

Each bound holds for every feasible plan: to place a group's ``minReplicas`` pods you need at least as many
domains as it takes, largest first, to add up to that many pods (per group, and per resource over the whole
gang). They serve three ends: ``placementScore`` (how far a plan is from the best it could conceivably be),
the greedy shortcut (a greedy plan that meets every bound is optimal, no solver needed), and the order in which
candidate domains of a required pack are searched.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from placement.problem import Problem

__all__ = ["Bounds", "fewest_to_cover", "gang_bounds", "tier_bounds"]


def fewest_to_cover(capacities: Iterable[int], need: int) -> int | None:
    """How many of ``capacities``, largest first, it takes to reach ``need``; ``None`` if all of them fall short."""
    if need <= 0:
        return 0
    total = 0
    for count, capacity in enumerate(sorted(capacities, reverse=True), start=1):
        total += capacity
        if total >= need:
            return count
    return None


def tier_bounds(problem: Problem, nodes: Collection[str] | None = None) -> tuple[int, ...] | None:
    """A lower bound per tier (see :mod:`placement.objective`) for plans using only ``nodes`` (default: all
    candidates); ``None`` when even this relaxation cannot place every group's ``minReplicas``."""
    pool = problem.nodes if nodes is None else [n for n in nodes if n in problem.node_set]
    everyone = range(len(problem.groups))
    preferred = 0
    for scope in problem.preferred:
        values = {n: problem.key_value(n, scope.key) or n for n in pool}
        count = _fewest_domains(_needs(problem, scope.groups), values)
        if count is None:
            return None
        preferred += max(0, count - 1)
    needs = _needs(problem, everyone)
    spans: list[int] = []
    for level in problem.span_levels:
        count = _fewest_domains(needs, {n: problem.domain(n, level) for n in pool})
        if count is None:
            return None
        spans.append(count)
    fresh: list[int] = []
    if problem.fresh_level is not None:
        level = problem.fresh_level
        count = _fewest_costly(needs, {n: problem.domain(n, level) for n in pool}, problem.fresh_domains)
        if count is None:
            return None
        fresh.append(count)
    count = _fewest_costly(needs, {n: n for n in pool}, problem.fresh_nodes)
    if count is None:
        return None
    fresh.append(count)
    pooled = set(pool)
    missing = sum(
        len(g.pods) - min(len(g.pods), sum(c for n, c in g.cap.items() if n in pooled)) for g in problem.groups
    )
    return (preferred, *spans, *fresh, missing)


@dataclass(frozen=True)
class Bounds:
    """``per_tier``: each tier's own lower bound (for the score); ``lexicographic``: a bound on the whole tuple
    (for proving a plan optimal); ``by_domain``: per candidate domain of a gang-wide required pack, when there is
    one (for searching those domains best bound first)."""

    per_tier: tuple[int, ...]
    lexicographic: tuple[int, ...]
    by_domain: Mapping[str, tuple[int, ...]] | None = None


def gang_bounds(problem: Problem) -> Bounds | None:
    """Bounds that know about a gang-wide ``required`` pack: every plan lies inside one domain of its key, so
    the bound is the best over those domains of the bound within each. ``None``: no domain can hold the gang."""
    scope = next((s for s in problem.required if len(s.groups) == len(problem.groups)), None)
    if problem.guaranteed_pods == 0:
        scope = None  # nothing must be placed, so no domain must hold anything
    if scope is None:
        whole = tier_bounds(problem)
        return None if whole is None else Bounds(whole, whole)
    members: dict[str, list[str]] = {}
    for node in problem.nodes:
        value = problem.key_value(node, scope.key)
        if value is not None:
            members.setdefault(value, []).append(node)
    by_domain = {v: b for v, nodes in members.items() if (b := tier_bounds(problem, nodes)) is not None}
    if not by_domain:
        return None
    per_tier = tuple(min(column) for column in zip(*by_domain.values(), strict=True))
    return Bounds(per_tier, min(by_domain.values()), by_domain)


_Need = tuple[Mapping[str, int], int]  # (what each node can contribute, amount the domains must add up to)


def _needs(problem: Problem, groups: Iterable[int]) -> list[_Need]:
    """What a set of domains must hold: each group's minimum in pods, and the groups' summed minimum demand per
    resource (counting only nodes where some of those groups may run)."""
    chosen = [problem.groups[g] for g in groups if problem.groups[g].min > 0]
    needs: list[_Need] = [(g.cap, g.min) for g in chosen]
    for resource in problem.resources:
        amount = sum(g.min * g.demand.get(resource, 0) for g in chosen)
        if amount > 0:
            hosts = {n for g in chosen if resource in g.demand for n in g.cap}
            needs.append(({n: problem.free(n, resource) for n in hosts}, amount))
    return needs


def _fewest_domains(needs: list[_Need], domain_of: Mapping[str, str]) -> int | None:
    best = 0
    for capacity, amount in needs:
        per_domain: dict[str, int] = {}
        for node, domain in domain_of.items():
            per_domain[domain] = per_domain.get(domain, 0) + capacity.get(node, 0)
        count = fewest_to_cover(per_domain.values(), amount)
        if count is None:
            return None
        best = max(best, count)
    return best


def _fewest_costly(needs: list[_Need], domain_of: Mapping[str, str], costly: Collection[str]) -> int | None:
    """How many ``costly`` (wholly free) domains a plan must break into once every other domain is full."""
    best = 0
    for capacity, amount in needs:
        cheap = 0
        per_costly: dict[str, int] = {}
        for node, domain in domain_of.items():
            if domain in costly:
                per_costly[domain] = per_costly.get(domain, 0) + capacity.get(node, 0)
            else:
                cheap += capacity.get(node, 0)
        count = fewest_to_cover(per_costly.values(), amount - cheap)
        if count is None:
            return None
        best = max(best, count)
    return best
