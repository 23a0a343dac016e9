"""Tier ``extras-missing``: best-effort pods (beyond ``minReplicas``) left unplaced.

Last on purpose: an extra pod never costs the guaranteed ones a wider span or a broken-into free domain; it goes
where the gang already is, or where it costs nothing the tiers above count. Not a quality tier: how many
best-effort pods run is a matter of quantity, not of placement, so placementScore leaves it out. Bound: the pods
the candidates cannot hold even one group at a time.
"""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from placement.arrays import Ints
from placement.model_vars import ModelVars, TierExpr
from placement.problem import Problem
from placement.tiers.family import BoundInputs, PlanFacts, TierFamily

__all__ = ["ExtrasMissing"]


class ExtrasMissing(TierFamily):
    quality = False

    def names(self, problem: Problem) -> tuple[str, ...]:
        return ("extras-missing",)

    def evaluate(self, problem: Problem, plan: PlanFacts) -> tuple[int, ...]:
        groups = zip(problem.groups, plan.placed, strict=True)
        return (sum(len(g.pods) - min(placed, len(g.pods)) for g, placed in groups),)

    def bounds(self, inputs: BoundInputs) -> list[Ints]:
        arrays = inputs.problem.arrays
        keep = inputs.groups >= 0
        missing = np.zeros(inputs.count, np.int64)
        for g, group in enumerate(inputs.problem.groups):
            cap = arrays.cap[g][inputs.idx][keep]
            room = np.bincount(inputs.groups[keep], weights=cap, minlength=inputs.count).astype(np.int64)
            missing += len(group.pods) - np.minimum(len(group.pods), room)
        return [missing]

    def model(self, mv: ModelVars) -> list[TierExpr]:
        groups = mv.problem.groups
        pods = sum(len(g.pods) for g in groups)
        missing = pods - cp_model.LinearExpr.sum([mv.total[g.index] for g in groups])
        return [TierExpr("extras-missing", missing, sum(g.extras for g in groups))]
