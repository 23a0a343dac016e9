"""Queue-aware planning: the head of the queue (the first K gangs by priority, then age) planned in one CP-SAT
model that decides which gangs start now and where.

Owns: head selection and the gangs' weights (``queue``), the batch objective (``objective``), the greedy warm
start (``warm_start``), the model (``model``) and the entry point (``plan``). Each gang is resolved and bounded as
``placement.solve`` resolves it, its tiers are the same tier modules' expressions, and every result passes
``placement.validation.batch_violations``. Pure, like the rest of ``placement``: no I/O, no time of day.
"""

from placement.batch.plan import BatchResult, plan_batch

__all__ = ["BatchResult", "plan_batch"]
