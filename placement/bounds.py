"""Lower bounds on each objective tier, from free capacity alone (no search).

To place a group's ``minReplicas`` pods you need at least as many domains as it takes, largest first, to add up
to that many pods (per group, and per resource over the whole gang). The best-fit tiers are bounded given the
span tiers above them at their bounds (a plan that spans more domains is already worse, whatever its fit), so
the bound vector is a lexicographic bound: a plan that meets it is optimal. They serve three ends:
``placementScore`` (how far a plan is from the best it could conceivably be), the greedy shortcut (a greedy
plan that meets every bound is optimal, no solver needed), and the order in which candidate domains of a
required pack are searched.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from placement.arrays import Ints
from placement.grouping import NEVER, Pools
from placement.problem import Problem

__all__ = ["Bounds", "fewest_to_cover", "gang_bounds", "tier_bounds"]

_Need = tuple[Ints, int]  # (what each node can contribute, amount the chosen domains must add up to)


def fewest_to_cover(capacities: Iterable[int], need: int) -> int | None:
    """How many of ``capacities``, largest first, it takes to reach ``need``; ``None`` if all of them fall short."""
    if need <= 0:
        return 0
    values = capacities if isinstance(capacities, np.ndarray) else np.fromiter(capacities, np.int64)
    ordered = np.sort(values)[::-1]
    total = np.cumsum(ordered)
    if not len(total) or total[-1] < need:
        return None
    return int(np.searchsorted(total, need)) + 1


def tier_bounds(problem: Problem, nodes: Ints | None = None, *, exact_fit: bool = True) -> tuple[int, ...] | None:
    """A lower bound per tier (see :mod:`placement.objective`) for plans using only the candidate nodes at
    indexes ``nodes`` (default: all); ``None`` when even this relaxation cannot place every ``minReplicas``.
    ``exact_fit=False`` skips the set enumeration of the wholly-free-nodes tier (cheaper, looser)."""
    idx = np.arange(len(problem.nodes)) if nodes is None else nodes
    table, feasible = _grouped_bounds(problem, idx, np.zeros(len(idx), np.int64), 1)
    if not feasible[0]:
        return None
    found = [int(v) for v in table[0]]
    if exact_fit:
        needs = _needs(problem, range(len(problem.groups)))
        spans = found[1 : 1 + len(problem.span_levels)]
        fresh = found[1 + len(spans) : -2]
        found[-2] = max(found[-2], _fresh_nodes_by_set(problem, needs, idx, spans, fresh, found[-2]))
    return tuple(found)


def _grouped_bounds(problem: Problem, idx: Ints, groups: Ints, count: int) -> tuple[Ints, npt.NDArray[np.bool_]]:
    """The coarse tier bounds of every group of candidate nodes at once (``groups[i]``: the group of node
    ``idx[i]``, -1 for none): one row per group, and whether the group can hold every ``minReplicas`` on capacity
    sums at all. Only the nodes at ``idx`` are read, so one small domain costs little on a large cluster."""
    arrays = problem.arrays
    needs = _sliced(_needs(problem, range(len(problem.groups))), idx)
    feasible = np.ones(count, np.bool_)
    preferred = np.zeros(count, np.int64)
    for scope in problem.preferred:
        scoped = _sliced(_needs(problem, scope.groups), idx)
        found = _fewest_domains(scoped, Pools(groups, arrays.key_ids(scope.key)[idx], count))
        feasible &= found < NEVER
        preferred += np.maximum(0, found - 1)
    spans: list[Ints] = []
    pools: dict[str, Pools] = {}
    for level in problem.span_levels:
        pools[level] = Pools(groups, arrays.level_ids[level][idx], count)
        found = _fewest_domains(needs, pools[level])
        feasible &= found < NEVER
        spans.append(np.where(feasible, found, 0))  # infeasible groups are dropped; keep their numbers small
    fresh: list[Ints] = []
    if problem.fresh_level is not None:
        k = spans[problem.span_levels.index(problem.fresh_level)]
        fresh.append(_fresh_domains(needs, pools[problem.fresh_level], arrays.fresh_domain_mask(), k))
    narrowest = pools[problem.span_levels[0]] if spans else None
    fresh.append(_fresh_nodes(arrays.fresh[idx], needs, groups, count, narrowest, spans[0] if spans else None))
    missing = np.zeros(count, np.int64)
    keep = groups >= 0
    for g, group in enumerate(problem.groups):
        room = np.bincount(groups[keep], weights=arrays.cap[g][idx][keep], minlength=count).astype(np.int64)
        missing += len(group.pods) - np.minimum(len(group.pods), room)
    return np.column_stack([preferred, *spans, *fresh, missing]), feasible


@dataclass(frozen=True)
class Bounds:
    """``per_tier``: each tier's own lower bound (for the score); ``lexicographic``: a bound on the whole tuple
    (for proving a plan optimal); ``by_domain``: per candidate domain of a gang-wide required pack, when there is
    one (for searching those domains best bound first)."""

    per_tier: tuple[int, ...]
    lexicographic: tuple[int, ...]
    by_domain: Mapping[str, tuple[int, ...]] | None = None  # without the exact best-fit refinement
    members: Mapping[str, Ints] | None = None  # candidate node indexes per domain, for refining on demand


def gang_bounds(problem: Problem) -> Bounds | None:
    """Bounds that know about a gang-wide ``required`` pack: every plan lies inside one domain of its key, so
    the bound is the best over those domains of the bound within each. ``None``: no domain can hold the gang."""
    scope = next((s for s in problem.required if len(s.groups) == len(problem.groups)), None)
    if problem.guaranteed_pods == 0:
        scope = None  # nothing must be placed, so no domain must hold anything
    if scope is None:
        whole = tier_bounds(problem)
        return None if whole is None else Bounds(whole, whole)
    arrays = problem.arrays
    values, domain_of = np.unique(arrays.key_ids(scope.key), return_inverse=True)
    domain_of = domain_of.reshape(-1)
    names = arrays.key_names(scope.key)
    # Coarse per domain, all domains at once: the exact best-fit refinement is paid only for domains a search
    # actually reaches. Scope groups only run on labelled nodes, so an unlabelled node's own "domain" holds
    # nothing of the gang.
    table, feasible = _grouped_bounds(problem, np.arange(len(domain_of)), domain_of, len(values))
    order = np.argsort(domain_of, kind="stable")
    edges = np.searchsorted(domain_of[order], np.arange(len(values) + 1))
    by_domain: dict[str, tuple[int, ...]] = {}
    members: dict[str, Ints] = {}
    for d in np.flatnonzero(feasible):
        name = names[int(values[d])]
        if not name.startswith("<none>:"):
            by_domain[name] = tuple(int(v) for v in table[d])
            members[name] = order[edges[d] : edges[d + 1]]
    if not by_domain:
        return None
    per_tier = tuple(min(column) for column in zip(*by_domain.values(), strict=True))
    return Bounds(per_tier, min(by_domain.values()), by_domain, members)


def _needs(problem: Problem, groups: Iterable[int]) -> list[_Need]:
    """What a set of domains must hold: each group's minimum in pods, and the groups' summed minimum demand per
    resource (counting only nodes where some of those groups may run)."""
    arrays = problem.arrays
    chosen = [g for g in groups if problem.groups[g].min > 0]
    cached = arrays.needs.get(tuple(chosen))
    if cached is not None:
        return cached
    needs: list[_Need] = [(arrays.cap[g], problem.groups[g].min) for g in chosen]
    for resource in problem.resources:
        amount = sum(problem.groups[g].min * problem.groups[g].demand.get(resource, 0) for g in chosen)
        if amount > 0:
            hosts = np.zeros(len(problem.nodes), np.bool_)
            for g in chosen:
                if resource in problem.groups[g].demand:
                    hosts |= arrays.cap[g] > 0
            needs.append((np.where(hosts, arrays.free[resource], 0), amount))
    arrays.needs[tuple(chosen)] = needs
    return needs


def _sliced(needs: list[_Need], idx: Ints) -> list[_Need]:
    return [(capacity[idx], amount) for capacity, amount in needs]


def _split(needs: list[_Need]) -> tuple[list[Ints], Ints]:
    """Needs as (capacity vectors, amounts as a column) for the grouped calls, one row per need."""
    return [capacity for capacity, _ in needs], np.array([[amount] for _, amount in needs], np.int64).reshape(-1, 1)


def _fewest_domains(needs: list[_Need], pools: Pools) -> Ints:
    """Per group, the fewest pools (largest first) that hold every need; :data:`NEVER` when they cannot."""
    if not needs:
        return np.zeros(pools.count, np.int64)
    capacities, amounts = _split(needs)
    return np.asarray(pools.ranked(capacities).fewest(amounts).max(axis=0))


def _fresh_domains(needs: list[_Need], pools: Pools, fresh: npt.NDArray[np.bool_], k: Ints) -> Ints:
    """Wholly free domains a plan spanning exactly ``k[g]`` domains must include: the fewest f such that the
    largest k − f partly used domains plus the largest f free ones can hold each need."""
    if not needs:
        return np.zeros(pools.count, np.int64)
    capacities, amounts = _split(needs)
    whole = fresh[pools.sub]
    partly, free = pools.ranked(capacities, ~whole), pools.ranked(capacities, whole)
    fewest = np.zeros(partly.shape, np.int64)
    settled = np.zeros(partly.shape, np.bool_)
    for f in range(int(k.max(initial=0)) + 1):
        rest = k[None, :] - f
        holds = (rest >= 0) & (rest <= partly.size) & (f <= free.size)
        holds &= partly.top(rest) + free.top(f) >= amounts
        fewest[holds & ~settled] = f
        settled |= holds
    return np.asarray(fewest.max(axis=0))


def _fresh_nodes(
    fresh: npt.NDArray[np.bool_], needs: list[_Need], groups: Ints, count: int, narrowest: Pools | None, k: Ints | None
) -> Ints:
    """Wholly free nodes a plan must break into once the partly used capacity of the (at most ``k[g]``, the span
    bound of the narrowest level) domains it uses is full."""
    if not needs:
        return np.zeros(count, np.int64)
    capacities, amounts = _split(needs)
    partly = [np.where(fresh, 0, capacity) for capacity in capacities]
    if narrowest is None or k is None:
        keep = groups >= 0
        cheap = np.stack([np.bincount(groups[keep], weights=p[keep], minlength=count) for p in partly])
    else:
        cheap = narrowest.ranked(partly).top(k[None, :])
    nodes = Pools(np.where(fresh, groups, -1), np.arange(len(groups)), count)  # each wholly free node a pool
    found = nodes.ranked(capacities).fewest(amounts - cheap.astype(np.int64))
    return np.asarray(np.where(found < NEVER, found, 0).max(axis=0))


_MAX_SETS = 400  # sets of narrowest domains examined for the exact best-fit bound; beyond it the coarse one stands


def _fresh_nodes_by_set(
    problem: Problem, needs: list[_Need], idx: Ints, spans: list[int], fresh_domains: list[int], coarse: int
) -> int:
    """Wholly free nodes a plan must break into, given that it uses exactly ``spans[0]`` narrowest domains,
    touches the bounded number of broader domains and of wholly free narrow ones (the tiers above at their
    bounds): the least over every such set of domains that holds each need. Exact for the relaxation, where
    :func:`_fresh_nodes` pools the best partly used room of any domains, even ones that cannot go together."""
    if not spans or not problem.span_levels:
        return coarse
    arrays = problem.arrays
    level = problem.span_levels[0]
    ids = arrays.level_ids[level][idx]
    domains = np.unique(ids)
    k = spans[0]
    if k == 0 or k > len(domains) or math.comb(len(domains), k) > _MAX_SETS:
        return coarse
    fresh = arrays.fresh[idx]
    # Group the nodes by domain once (a stable sort), then per domain and need: partly used room, and the free
    # nodes' capacities, largest first.
    order = np.argsort(ids, kind="stable")
    edges = [*np.searchsorted(ids[order], domains).tolist(), len(ids)]
    caps = [cap[idx][order] for cap, _ in needs]
    fresh_sorted = fresh[order]
    partly: list[list[int]] = []
    whole: list[list[Ints]] = []
    for begin, end in itertools.pairwise(edges):
        inside = fresh_sorted[begin:end]
        partly.append([int(c[begin:end][~inside].sum()) for c in caps])
        whole.append([np.sort(c[begin:end][inside])[::-1] for c in caps])
    broader = [arrays.level_ids[lv][idx][order] for lv in problem.span_levels[1:]]
    parents = [tuple(int(b[begin]) for b in broader) for begin in edges[:-1]]
    fresh_mask = arrays.fresh_domain_mask() if problem.fresh_level == level else None
    best: int | None = None
    for combo in itertools.combinations(range(len(domains)), k):
        if any(len({parents[i][j] for i in combo}) != spans[1 + j] for j in range(len(broader))):
            continue  # a set that spans more broader domains than the bound is already worse
        if (
            fresh_mask is not None
            and fresh_domains
            and sum(bool(fresh_mask[domains[i]]) for i in combo) != fresh_domains[0]
        ):
            continue
        worst = 0
        for n, (_, amount) in enumerate(needs):
            rest = amount - sum(partly[i][n] for i in combo)
            count = fewest_to_cover(np.concatenate([whole[i][n] for i in combo]), rest)
            if count is None:
                worst = -1
                break
            worst = max(worst, count)
        if worst >= 0 and (best is None or worst < best):
            best = worst
    return coarse if best is None else best
