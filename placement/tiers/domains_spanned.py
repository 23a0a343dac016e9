"""Tiers ``span:<level>``, one per level below the host, narrowest first: how many domains of that level the gang
touches.

Narrow first because crossing an NVLink domain costs far more bandwidth than crossing a zone costs latency once
the pods are already off NVLink (ARCHITECTURE.md: NVLink domain before zone). An unlabelled node is a domain of its
own, so missing labels never make a spread placement look packed. Bound: the fewest domains of the level, largest
first, that hold every need of the gang (a group of candidates that cannot is infeasible).
"""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from placement.arrays import Ints
from placement.grouping import NEVER
from placement.model_vars import ModelVars, TierExpr
from placement.problem import Problem
from placement.tiers.family import BoundInputs, PlanFacts, TierFamily, fewest_pools

__all__ = ["DomainsSpanned"]


class DomainsSpanned(TierFamily):
    def names(self, problem: Problem) -> tuple[str, ...]:
        return tuple(f"span:{level}" for level in problem.span_levels)

    def evaluate(self, problem: Problem, plan: PlanFacts) -> tuple[int, ...]:
        return tuple(len({problem.domain(n, level) for n in plan.nodes}) for level in problem.span_levels)

    def bounds(self, inputs: BoundInputs) -> list[Ints]:
        found: list[Ints] = []
        needs = inputs.needs()
        for level in inputs.problem.span_levels:
            fewest = fewest_pools(needs, inputs.level_pools(level))
            inputs.feasible &= fewest < NEVER
            found.append(np.where(inputs.feasible, fewest, 0))  # infeasible groups are dropped: keep them small
        return found

    def model(self, mv: ModelVars) -> list[TierExpr]:
        problem = mv.problem
        pods = problem.total_pods
        tiers: list[TierExpr] = []
        for level in problem.span_levels:
            domains = mv.by_domain(level)
            flags = [
                mv.indicator(f"span[{level}]={value}", nodes, cache=(level, value)) for value, nodes in domains.items()
            ]
            tiers.append(TierExpr(f"span:{level}", cp_model.LinearExpr.sum(flags), min(pods, len(flags))))
        return tiers
