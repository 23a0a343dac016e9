"""Preemption planning: which lower-priority work makes way so that a whole gang fits.

Owns: the victim model (running pods evicted, reservations yielded), the rule that no victim gang is left below
``minReplicas`` in any group (evicted whole, or only its members above the minimum), the cost order victims are
chosen by, a KAI-like greedy baseline and a validator that does not import the solver. Does not own: where the
candidates come from (the extender gathers them from the cluster), evicting anything, or time.
"""

from placement.preemption.request import Preemption, PreemptionCost, Victim, VictimGang

__all__ = ["Preemption", "PreemptionCost", "Victim", "VictimGang"]
