"""Soft, first tier: each ``preferred`` pack scope should touch one value of its key; every extra value costs 1.

A node lacking the label counts as a value of its own, so spilling onto unlabelled nodes is never free.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from placement.cpsat.variables import ModelVars, Tier

__all__ = ["preferred_pack_tiers"]


def preferred_pack_tiers(mv: ModelVars) -> list[Tier]:
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
    return [Tier("preferred", cp_model.LinearExpr.sum(terms), upper)]
