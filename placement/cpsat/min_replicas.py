"""Hard: every group of an active gang places at least ``minReplicas`` pods (the gang guarantee) and at most all of
its pods; an inactive gang (one a batch leaves waiting) places none."""

from __future__ import annotations

from placement.model_vars import ModelVars

__all__ = ["add_min_replicas"]


def add_min_replicas(mv: ModelVars) -> None:
    for group in mv.problem.groups:
        total = mv.total[group.index]
        mv.model.add(total >= group.min * mv.active)
        mv.model.add(total <= len(group.pods) * mv.active)
