"""Hard: the preemptor's pods on a node never exceed what is free there now plus what the chosen victims on it
give back, for every resource. It stands in for :mod:`placement.cpsat.capacity`, whose rows hold the problem's
free units, which here count every victim as gone.

A row is needed wherever the preemptor's pods could overrun the units free now, even for a single group: its
per-node cap was worked out with every victim gone.
"""

from __future__ import annotations

import math

from placement.preemption.victim_vars import VictimVars

__all__ = ["add_freed_capacity"]


def add_freed_capacity(vv: VictimVars) -> None:
    mv = vv.placement
    problem = mv.problem
    on_node: dict[str, list[int]] = {}
    for i, victim in enumerate(vv.pool.victims):
        on_node.setdefault(victim.node, []).append(i)
    for node in problem.nodes:
        groups = [g for g in range(len(problem.groups)) if (g, node) in mv.count]
        for resource in problem.resources:
            placed = [(problem.groups[g].demand.get(resource, 0), g) for g in groups]
            placed = [(units, g) for units, g in placed if units > 0]
            free = vv.free.get(node, {}).get(resource, 0)
            if sum(units * problem.groups[g].cap[node] for units, g in placed) <= free:
                continue  # fits with every victim in place
            freed = [(vv.pool.victims[i].demand.get(resource, 0), i) for i in on_node.get(node, [])]
            freed = [(units, i) for units, i in freed if units > 0]
            # As in placement.cpsat.capacity, dividing by the gcd of every coefficient keeps them small and exact.
            k = math.gcd(*(units for units, _ in placed), *(units for units, _ in freed))
            pods = sum(units // k * mv.count[(g, node)] for units, g in placed)
            given = sum(units // k * vv.chosen[i] for units, i in freed)
            vv.model.add(pods - given <= free // k)
