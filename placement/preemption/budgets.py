"""Hard: no disruption budget has more of the victims it covers chosen than it allows. The Eviction API refuses an
eviction past a PodDisruptionBudget's ``disruptionsAllowed``; a choice counting on it would leave its victims half
evicted and the preemptor waiting.
"""

from __future__ import annotations

from placement.preemption.victim_vars import VictimVars

__all__ = ["add_budgets"]


def add_budgets(vv: VictimVars) -> None:
    for _, covered, allowed in vv.pool.budgets:
        if len(covered) > allowed:
            vv.model.add(sum(vv.chosen[i] for i in covered) <= allowed)
