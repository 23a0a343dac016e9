"""Tier ``fresh:<level>``: wholly free NVLink domains (the narrowest level when there is no NVLink level) the gang
breaks into. Best fit fills partly used domains first and keeps whole ones for the next gang that needs them,
which is what makes later large gangs placeable at all.

Bound: a plan at the span bound of that level uses exactly k of its domains; the fewest wholly free ones among
them is the least f such that the largest k − f partly used domains and the largest f free ones hold each need.
"""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from placement.arrays import Ints
from placement.model_vars import ModelVars, TierExpr
from placement.problem import Problem
from placement.tiers.family import BoundInputs, PlanFacts, TierFamily, split

__all__ = ["FreshDomains"]


class FreshDomains(TierFamily):
    def names(self, problem: Problem) -> tuple[str, ...]:
        return (f"fresh:{problem.fresh_level}",) if problem.fresh_level else ()

    def evaluate(self, problem: Problem, plan: PlanFacts) -> tuple[int, ...]:
        level = problem.fresh_level
        if level is None:
            return ()
        return (len({problem.domain(n, level) for n in plan.nodes} & problem.fresh_domains),)

    def bounds(self, inputs: BoundInputs) -> list[Ints]:
        problem = inputs.problem
        level = problem.fresh_level
        if level is None:
            return []
        needs = inputs.needs()
        if not needs:
            return [np.zeros(inputs.count, np.int64)]
        k = inputs.found[f"span:{level}"]
        pools = inputs.level_pools(level)
        capacities, amounts = split(needs)
        whole = problem.arrays.fresh_domain_mask()[pools.sub]
        partly, free = pools.ranked(capacities, ~whole), pools.ranked(capacities, whole)
        fewest = np.zeros(partly.shape, np.int64)
        settled = np.zeros(partly.shape, np.bool_)
        for f in range(int(k.max(initial=0)) + 1):
            rest = k[None, :] - f
            holds = (rest >= 0) & (rest <= partly.size) & (f <= free.size)
            holds &= partly.top(rest) + free.top(f) >= amounts
            fewest[holds & ~settled] = f
            settled |= holds
        return [np.asarray(fewest.max(axis=0))]

    def model(self, mv: ModelVars) -> list[TierExpr]:
        problem = mv.problem
        level = problem.fresh_level
        if level is None:
            return []
        flags = [
            mv.indicator(f"span[{level}]={value}", nodes, cache=(level, value))
            for value, nodes in mv.by_domain(level).items()
            if value in problem.fresh_domains
        ]
        return [TierExpr(f"fresh:{level}", cp_model.LinearExpr.sum(flags), min(problem.total_pods, len(flags)))]
