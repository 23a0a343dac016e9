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

from placement.arrays import Ints
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
    arrays = problem.arrays
    idx = np.arange(len(problem.nodes)) if nodes is None else nodes
    needs = _needs(problem, range(len(problem.groups)))
    preferred = 0
    for scope in problem.preferred:
        count = _fewest_domains(_needs(problem, scope.groups), arrays.key_ids(scope.key), idx)
        if count is None:
            return None
        preferred += max(0, count - 1)
    spans: list[int] = []
    for level in problem.span_levels:
        count = _fewest_domains(needs, arrays.level_ids[level], idx)
        if count is None:
            return None
        spans.append(count)
    fresh: list[int] = []
    if problem.fresh_level is not None:
        k = spans[problem.span_levels.index(problem.fresh_level)]
        fresh.append(_fresh_domains(needs, arrays.level_ids[problem.fresh_level], arrays.fresh_domain_mask(), idx, k))
    coarse = _fresh_nodes(problem, needs, idx, spans[0] if spans else None)
    if exact_fit:
        coarse = max(coarse, _fresh_nodes_by_set(problem, needs, idx, spans, fresh, coarse))
    fresh.append(coarse)
    pods = [len(g.pods) for g in problem.groups]
    room = [int(arrays.cap[g][idx].sum()) for g in range(len(pods))]
    missing = sum(p - min(p, r) for p, r in zip(pods, room, strict=True))
    return (preferred, *spans, *fresh, missing)


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
    ids = arrays.key_ids(scope.key)
    names = arrays.key_names(scope.key)
    # Scope groups only run on labelled nodes, so an unlabelled node's own "domain" holds nothing of the gang.
    order = np.argsort(ids, kind="stable")
    edges = [*np.flatnonzero(np.diff(ids[order], prepend=-1)).tolist(), len(ids)]
    by_domain: dict[str, tuple[int, ...]] = {}
    members: dict[str, Ints] = {}
    for begin, end in itertools.pairwise(edges if len(ids) else []):
        idx = order[begin:end]
        name = names[int(ids[idx[0]])]
        # Coarse per domain: the exact best-fit refinement is paid only for domains a search actually reaches.
        if not name.startswith("<none>:") and (found := tier_bounds(problem, idx, exact_fit=False)) is not None:
            by_domain[name] = found
            members[name] = idx
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


def _sums(ids: Ints, weights: Ints, idx: Ints) -> Ints:
    return np.bincount(ids[idx], weights=weights[idx]).astype(np.int64)


def _fewest_domains(needs: list[_Need], ids: Ints, idx: Ints) -> int | None:
    best = 0
    for capacity, amount in needs:
        count = fewest_to_cover(_sums(ids, capacity, idx), amount)
        if count is None:
            return None
        best = max(best, count)
    return best


def _fresh_domains(needs: list[_Need], ids: Ints, fresh: np.ndarray, idx: Ints, k: int) -> int:
    """Wholly free domains a plan spanning exactly ``k`` domains must include: the fewest f such that the
    largest k − f partly used domains plus the largest f free ones can hold each need."""
    best = 0
    for capacity, amount in needs:
        sums = _sums(ids, capacity, idx)
        used = np.bincount(ids[idx], minlength=len(sums)) > 0
        mask = fresh[: len(sums)]
        partly = np.sort(sums[used & ~mask])[::-1]
        whole = np.sort(sums[used & mask])[::-1]
        for f in range(k + 1):
            if k - f <= len(partly) and f <= len(whole) and partly[: k - f].sum() + whole[:f].sum() >= amount:
                best = max(best, f)
                break
    return best


def _fresh_nodes(problem: Problem, needs: list[_Need], idx: Ints, k: int | None) -> int:
    """Wholly free nodes a plan must break into once the partly used capacity of the (at most ``k``, the span
    bound of the narrowest level) domains it uses is full."""
    arrays = problem.arrays
    fresh = arrays.fresh[idx]
    best = 0
    for capacity, amount in needs:
        cap = capacity[idx]
        if k is None:
            cheap = int(cap[~fresh].sum())
        else:
            ids = arrays.level_ids[problem.span_levels[0]][idx]
            cheap = int(np.sort(np.bincount(ids, weights=np.where(fresh, 0, cap)))[::-1][:k].sum())
        count = fewest_to_cover(cap[fresh], amount - cheap)
        best = max(best, count if count is not None else 0)
    return best


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
