"""Soft, one tier per level below the host, narrowest first: how many domains of that level the gang touches.

Narrow first because crossing an NVLink domain costs far more bandwidth than crossing a zone costs latency once
the pods are already off NVLink (DESIGN.md: rack/NVLink domain before zone).
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from placement.cpsat.variables import ModelVars, Tier

__all__ = ["domains_spanned_tiers"]


def domains_spanned_tiers(mv: ModelVars) -> list[Tier]:
    problem = mv.problem
    pods = problem.total_pods
    tiers: list[Tier] = []
    for level in problem.span_levels:
        domains = mv.by_domain(level)
        flags = [
            mv.indicator(f"span[{level}]={value}", nodes, cache=(level, value)) for value, nodes in domains.items()
        ]
        tiers.append(Tier(f"span:{level}", cp_model.LinearExpr.sum(flags), min(pods, len(flags))))
    return tiers
