"""Soft, last tier: best-effort pods (beyond ``minReplicas``) left unplaced.

Last on purpose: an extra pod never costs the guaranteed ones a wider span or a broken-into free domain; it
goes where the gang already is, or where it costs nothing the tiers above count.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from placement.cpsat.variables import ModelVars, Tier

__all__ = ["extras_tiers"]


def extras_tiers(mv: ModelVars) -> list[Tier]:
    groups = mv.problem.groups
    pods = sum(len(g.pods) for g in groups)
    missing = pods - cp_model.LinearExpr.sum([mv.total[g.index] for g in groups])
    return [Tier("extras-missing", missing, sum(g.extras for g in groups))]
