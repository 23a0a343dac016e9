"""The objective: :class:`~placement.preemption.request.PreemptionCost`'s fields as tiers, in its order.

A priority is a rank among the distinct priorities of the gangs of that kind (1 for the lowest, 0 when no gang of
the kind makes way), so the tier's range is the number of distinct priorities, not the span of their values (which
may be a billion). The rank tier is at least the rank of every gang that loses a member and is pushed down by the
minimisation, so at the optimum it is the highest rank among them. Tiers that cannot be other than 0 (no victim of
that kind) are left out.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from placement.model_vars import TierExpr
from placement.preemption.victim_vars import VictimVars

__all__ = ["TIER_NAMES", "cost_tiers"]

TIER_NAMES = (
    "victim-priority",
    "victim-gpus",
    "victim-gangs",
    "victim-pods",
    "yielded-priority",
    "yielded-gpus",
    "yielded-gangs",
)


def cost_tiers(vv: VictimVars) -> list[TierExpr]:
    pool = vv.pool
    running = [gang for gang in pool.members if not pool.gangs[gang].reserved]
    reserved = [gang for gang in pool.members if pool.gangs[gang].reserved]
    run_victims = [i for gang in running for i in pool.members[gang]]
    yield_victims = [i for gang in reserved for i in pool.members[gang]]
    tiers = [
        _highest_rank(vv, running, "victim-priority"),
        _gpus(vv, run_victims, "victim-gpus"),
        TierExpr("victim-gangs", cp_model.LinearExpr.sum([vv.touched(g) for g in running]), len(running)),
        TierExpr("victim-pods", cp_model.LinearExpr.sum([vv.chosen[i] for i in run_victims]), len(run_victims)),
        _highest_rank(vv, reserved, "yielded-priority"),
        _gpus(vv, yield_victims, "yielded-gpus"),
        TierExpr("yielded-gangs", cp_model.LinearExpr.sum([vv.whole[g] for g in reserved]), len(reserved)),
    ]
    return [tier for tier in tiers if tier.upper > 0]


def _highest_rank(vv: VictimVars, gangs: list[str], name: str) -> TierExpr:
    priorities = sorted({vv.pool.gangs[gang].priority for gang in gangs})
    rank = {priority: r + 1 for r, priority in enumerate(priorities)}
    level = vv.model.new_int_var(0, len(priorities), name)
    for gang in gangs:
        vv.model.add(level >= rank[vv.pool.gangs[gang].priority] * vv.touched(gang))
    return TierExpr(name, level, len(priorities))


def _gpus(vv: VictimVars, victims: list[int], name: str) -> TierExpr:
    gpus = [(vv.pool.gpus(i), i) for i in victims]
    gpus = [(units, i) for units, i in gpus if units > 0]
    expr = cp_model.LinearExpr.weighted_sum([vv.chosen[i] for _, i in gpus], [units for units, _ in gpus])
    return TierExpr(name, expr, sum(units for units, _ in gpus))
