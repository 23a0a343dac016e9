"""Tier ``fresh:host``: wholly free nodes the gang breaks into. Filling partly used nodes first keeps whole nodes
for the gangs whose pods need one.

Bound, coarse (every domain at once): the wholly free nodes a plan must break into once the partly used room of
the (at most k, the span bound of the narrowest level) domains it uses is full. Exact (``refine``, for the domain a
search is about to solve): the least over every set of exactly k narrowest domains that the tiers above allow.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from ortools.sat.python import cp_model

from placement.arrays import Ints
from placement.grouping import NEVER, Pools, fewest_to_cover
from placement.model_vars import ModelVars, TierExpr
from placement.problem import Problem
from placement.tiers.family import BoundInputs, Need, PlanFacts, TierFamily, needs_of, split

__all__ = ["FreshNodes"]

NAME = "fresh:host"
_MAX_SETS = 400  # sets of narrowest domains examined for the exact bound; beyond it the coarse one stands


class FreshNodes(TierFamily):
    def names(self, problem: Problem) -> tuple[str, ...]:
        return (NAME,)

    def evaluate(self, problem: Problem, plan: PlanFacts) -> tuple[int, ...]:
        return (len(plan.nodes & problem.fresh_nodes),)

    def bounds(self, inputs: BoundInputs) -> list[Ints]:
        problem, count, groups = inputs.problem, inputs.count, inputs.groups
        needs = inputs.needs()
        if not needs:
            return [np.zeros(count, np.int64)]
        fresh = problem.arrays.fresh[inputs.idx]
        capacities, amounts = split(needs)
        partly = [np.where(fresh, 0, capacity) for capacity in capacities]
        if problem.span_levels:
            k = inputs.found[f"span:{problem.span_levels[0]}"]
            cheap = inputs.level_pools(problem.span_levels[0]).ranked(partly).top(k[None, :])
        else:
            keep = groups >= 0
            cheap = np.stack([np.bincount(groups[keep], weights=p[keep], minlength=count) for p in partly])
        nodes = Pools(np.where(fresh, groups, -1), np.arange(len(groups)), count)  # each wholly free node a pool
        found = nodes.ranked(capacities).fewest(amounts - cheap.astype(np.int64))
        return [np.asarray(np.where(found < NEVER, found, 0).max(axis=0))]

    def refine(self, problem: Problem, idx: Ints, found: dict[str, int]) -> dict[str, int]:
        if not problem.span_levels:
            return {}
        spans = [found[f"span:{level}"] for level in problem.span_levels]
        fresh = found.get(f"fresh:{problem.fresh_level}")
        needs = needs_of(problem, range(len(problem.groups)))
        exact = _by_set(problem, needs, idx, spans, fresh)
        return {} if exact is None or exact <= found[NAME] else {NAME: exact}

    def model(self, mv: ModelVars) -> list[TierExpr]:
        problem = mv.problem
        fresh = [mv.node_used(n) for n in problem.nodes if n in problem.fresh_nodes]
        return [TierExpr(NAME, cp_model.LinearExpr.sum(fresh), min(problem.total_pods, len(fresh)))]


def _by_set(problem: Problem, needs: list[Need], idx: Ints, spans: list[int], fresh_domains: int | None) -> int | None:
    """The least, over every set of exactly ``spans[0]`` narrowest domains that touches the bounded number of
    broader domains and of wholly free narrow ones (the tiers above at their bounds) and holds each need, of the
    wholly free nodes it must break into; ``None`` when there are too many sets to try or none qualifies.
    Exact for the relaxation, where the coarse bound pools the best partly used room of any domains, even ones
    that cannot go together."""
    arrays = problem.arrays
    level = problem.span_levels[0]
    ids = arrays.level_ids[level][idx]
    domains = np.unique(ids)
    k = spans[0]
    if k == 0 or k > len(domains) or math.comb(len(domains), k) > _MAX_SETS:
        return None
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
        fresh_in = None if fresh_mask is None else int(fresh_mask[domains[list(combo)]].sum())
        if fresh_domains is not None and fresh_in is not None and fresh_in != fresh_domains:
            continue  # a set breaking more (or fewer) wholly free domains than the bound is not at it
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
    return best
