"""Soft, after the spans: break into as few wholly free NVLink domains, then wholly free nodes, as possible.

Filling partly used domains and nodes first keeps whole NVLink domains and whole nodes free for the next gang
that needs them, which is what makes later large gangs placeable at all.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from placement.cpsat.variables import ModelVars, Tier

__all__ = ["best_fit_tiers"]


def best_fit_tiers(mv: ModelVars) -> list[Tier]:
    problem = mv.problem
    pods = problem.total_pods
    tiers: list[Tier] = []
    if problem.fresh_level is not None:
        level = problem.fresh_level
        domains = mv.by_domain(level)
        flags = [
            mv.indicator(f"span[{level}]={value}", nodes, cache=(level, value))
            for value, nodes in domains.items()
            if value in problem.fresh_domains
        ]
        tiers.append(Tier(f"fresh:{level}", cp_model.LinearExpr.sum(flags), min(pods, len(flags))))
    fresh = [mv.node_used(n) for n in problem.nodes if n in problem.fresh_nodes]
    tiers.append(Tier("fresh:host", cp_model.LinearExpr.sum(fresh), min(pods, len(fresh))))
    return tiers
