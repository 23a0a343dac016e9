"""Which constraints and objective tiers make up the model, in one place. Objective modules are listed in
priority order; the tiers they return, concatenated, must match :func:`placement.objective.tier_names`."""

from __future__ import annotations

from collections.abc import Callable

from placement.cpsat.best_fit import best_fit_tiers
from placement.cpsat.capacity import add_capacity
from placement.cpsat.domains_spanned import domains_spanned_tiers
from placement.cpsat.extras import extras_tiers
from placement.cpsat.min_replicas import add_min_replicas
from placement.cpsat.preferred_pack import preferred_pack_tiers
from placement.cpsat.required_pack import add_required_pack
from placement.cpsat.variables import ModelVars, Tier

__all__ = ["CONSTRAINTS", "OBJECTIVES"]

CONSTRAINTS: dict[str, Callable[[ModelVars], None]] = {
    "capacity": add_capacity,
    "min-replicas": add_min_replicas,
    "required-pack": add_required_pack,
}

OBJECTIVES: dict[str, Callable[[ModelVars], list[Tier]]] = {
    "preferred-pack": preferred_pack_tiers,
    "domains-spanned": domains_spanned_tiers,
    "best-fit": best_fit_tiers,
    "extras": extras_tiers,
}
