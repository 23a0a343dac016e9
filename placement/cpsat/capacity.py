"""Hard: the pods placed on a node never exceed its free units of any resource (one gang's, or a batch's).

A group's own per-node cap already keeps it within capacity on its own, so a capacity row is only needed where
several groups could share a node and their caps together overrun it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from placement.model_vars import ModelVars

__all__ = ["add_capacity", "add_shared_capacity"]


def add_capacity(mv: ModelVars) -> None:
    problem = mv.problem
    for node in problem.nodes:
        on_node = [g for g in range(len(problem.groups)) if (g, node) in mv.count]
        if len(on_node) < 2:
            continue
        for resource in problem.resources:
            terms = [(problem.groups[g].demand.get(resource, 0), g) for g in on_node]
            terms = [(units, g) for units, g in terms if units > 0]
            free = problem.free(node, resource)
            if sum(units * problem.groups[g].cap[node] for units, g in terms) <= free:
                continue
            # Dividing by the gcd of the demands keeps coefficients small (memory is in bytes) and is exact:
            # sum(d·x) ≤ F  ⇔  sum(d/k·x) ≤ ⌊F/k⌋ when k divides every d.
            k = math.gcd(*(units for units, _ in terms))
            mv.model.add(sum(units // k * mv.count[(g, node)] for units, g in terms) <= free // k)


def add_shared_capacity(gangs: Sequence[ModelVars]) -> None:
    """Hard, for a batch of gangs in one model: the pods of every gang on a node never exceed its free units of
    any resource (each gang's own caps keep it within capacity alone, not beside the others)."""
    if not gangs:
        return
    problem = gangs[0].problem
    model = gangs[0].model
    on_node: dict[str, list[tuple[ModelVars, int]]] = {}
    for mv in gangs:
        for g, node in mv.count:
            on_node.setdefault(node, []).append((mv, g))
    for node, holders in on_node.items():
        resources = {r for mv, g in holders for r in mv.problem.groups[g].demand}
        for resource in sorted(resources):
            terms = [(mv.problem.groups[g].demand.get(resource, 0), mv, g) for mv, g in holders]
            terms = [(units, mv, g) for units, mv, g in terms if units > 0]
            free = problem.free(node, resource)
            if sum(units * mv.problem.groups[g].cap[node] for units, mv, g in terms) <= free:
                continue
            k = math.gcd(*(units for units, _, _ in terms))
            model.add(sum(units // k * mv.count[(g, node)] for units, mv, g in terms) <= free // k)
