"""Hard: the pods placed on a node never exceed its free units of any resource.

A group's own per-node cap already keeps it within capacity on its own, so a capacity row is only needed where
several groups could share a node and their caps together overrun it.
"""

from __future__ import annotations

import math

from placement.cpsat.variables import ModelVars

__all__ = ["add_capacity"]


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
