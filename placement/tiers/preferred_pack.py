"""Tier ``preferred``: each ``preferred`` pack scope should touch one value of its key; every extra value costs 1.

A node lacking the label counts as a value of its own, so spilling onto unlabelled nodes is never free.
Bound: the fewest values of the key, largest first, whose capacity holds the scope's guaranteed pods (a group of
candidates that cannot hold them at all is infeasible).
"""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from placement.arrays import Ints
from placement.grouping import NEVER
from placement.model_vars import ModelVars, TierExpr
from placement.problem import Problem
from placement.tiers.family import BoundInputs, PlanFacts, TierFamily, fewest_pools

__all__ = ["PreferredPack"]


class PreferredPack(TierFamily):
    def names(self, problem: Problem) -> tuple[str, ...]:
        return ("preferred",)

    def evaluate(self, problem: Problem, plan: PlanFacts) -> tuple[int, ...]:
        missed = 0
        for scope in problem.preferred:
            values = {problem.key_value(n, scope.key) or f"<none>:{n}" for g, n in plan.used if g in scope.groups}
            missed += max(0, len(values) - 1)
        return (missed,)

    def bounds(self, inputs: BoundInputs) -> list[Ints]:
        arrays = inputs.problem.arrays
        missed = np.zeros(inputs.count, np.int64)
        for scope in inputs.problem.preferred:
            pools = inputs.pools(arrays.key_ids(scope.key), key=f"key:{scope.key}")
            found = fewest_pools(inputs.needs(scope.groups), pools)
            inputs.feasible &= found < NEVER
            missed += np.maximum(0, np.where(found < NEVER, found, 0) - 1)
        return [missed]

    def model(self, mv: ModelVars) -> list[TierExpr]:
        problem = mv.problem
        terms: list[cp_model.LinearExpr] = []
        upper = 0
        for scope in problem.preferred:
            touched: dict[str, cp_model.IntVar] = {}
            for (g, node), var in mv.count.items():
                if g not in scope.groups:
                    continue
                value = problem.key_value(node, scope.key) or f"<none>:{node}"
                if value not in touched:
                    touched[value] = mv.model.new_bool_var(f"preferred[{scope.index}]={value}")
                mv.model.add(var <= problem.groups[g].cap[node] * touched[value])
            if not touched:
                continue
            # cost = values touched − 1, but 0 when the scope places nothing (all its groups have minReplicas 0).
            anything = mv.model.new_bool_var(f"preferred[{scope.index}].any")
            mv.model.add_max_equality(anything, list(touched.values()))
            terms.append(cp_model.LinearExpr.sum(list(touched.values())) - anything)
            pods = sum(len(problem.groups[g].pods) for g in scope.groups)
            upper += max(0, min(len(touched), pods) - 1)
        return [TierExpr("preferred", cp_model.LinearExpr.sum(terms), upper)]
