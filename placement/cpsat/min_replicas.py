"""Hard: every group places at least ``minReplicas`` pods (the gang guarantee) and at most all of its pods."""

from __future__ import annotations

from placement.cpsat.variables import ModelVars

__all__ = ["add_min_replicas"]


def add_min_replicas(mv: ModelVars) -> None:
    for group in mv.problem.groups:
        mv.model.add_linear_constraint(mv.total[group.index], group.min, len(group.pods))
