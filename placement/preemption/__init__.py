"""Preemption planning: which lower-priority work makes way so that a whole gang fits.

Owns: the victim model (running pods evicted, reservations yielded), the rule that no victim gang is left below
``minReplicas`` in any group (evicted whole, or only its members above the minimum), disruption budgets (never
more victims under one than it allows), the cost order victims are chosen by, a KAI-like greedy baseline and a
validator that does not import the solver. Does not own: where the
candidates come from (the extender gathers them from the cluster), evicting anything, or time.

Laid out as :mod:`placement.cpsat` is: the contract (``request``), the victims checked and indexed (``pool``), a
variable container (``victim_vars``), one module per constraint (``freed_capacity``, ``gang_rule``; the placement
model's own minReplicas and required-pack constraints are reused) and for the objective (``cost_tiers``), the model
composed (``model``; disruption budgets in ``budgets``), the greedy (``greedy``), the call that puts them together
(``plan``) and the validator.
"""

from placement.preemption.greedy import greedy_preemption
from placement.preemption.plan import plan_preemption
from placement.preemption.request import Budget, Preemption, PreemptionCost, Victim, VictimGang
from placement.preemption.validation import preemption_violations

__all__ = [
    "Budget",
    "Preemption",
    "PreemptionCost",
    "Victim",
    "VictimGang",
    "greedy_preemption",
    "plan_preemption",
    "preemption_violations",
]
