"""Which hard constraints make up the model, in one place (an explicit dict, no import-time registration). The
objective tiers are :data:`placement.objective.TIERS`, each family's CP-SAT expression in its own module."""

from __future__ import annotations

from collections.abc import Callable

from placement.cpsat.capacity import add_capacity
from placement.cpsat.min_replicas import add_min_replicas
from placement.cpsat.required_pack import add_required_pack
from placement.model_vars import ModelVars

__all__ = ["CONSTRAINTS"]

CONSTRAINTS: dict[str, Callable[[ModelVars], None]] = {
    "capacity": add_capacity,
    "min-replicas": add_min_replicas,
    "required-pack": add_required_pack,
}
