"""Drop candidate nodes that cannot be in any plan before a model is built over them.

A node in a domain of a required pack key that cannot hold the scope's guaranteed pods (per group in pods, and
per resource in units) can never host a pod of that scope: whichever plan used it would have to put the whole
scope there. Removing such nodes is exact and usually shrinks a large cluster to a handful of domains.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from placement.problem import Problem, Scope

__all__ = ["holding_domains", "prune"]


def holding_domains(problem: Problem, scope: Scope) -> npt.NDArray[np.bool_]:
    """Per value id of the scope's key (``problem.arrays.key_ids``): can that domain hold the scope's
    guaranteed pods on capacity sums (pods per group, units per resource)?"""
    arrays = problem.arrays
    ids = arrays.key_ids(scope.key)
    size = int(ids.max()) + 1 if len(ids) else 0
    chosen = [problem.groups[g] for g in scope.groups]
    holds = np.ones(size, np.bool_)
    hosts = np.zeros(len(ids), np.bool_)
    for g in chosen:
        holds &= np.bincount(ids, weights=arrays.cap[g.index], minlength=size) >= g.min
        hosts |= arrays.cap[g.index] > 0
    for resource in problem.resources:
        need = sum(g.min * g.demand.get(resource, 0) for g in chosen)
        if need:
            units = np.where(hosts, arrays.free[resource], 0)
            holds &= np.bincount(ids, weights=units, minlength=size) >= need
    return holds


def prune(problem: Problem) -> Problem:
    """Repeat until nothing changes: removing nodes from one scope can starve a domain of another."""
    while True:
        keep: dict[int, set[str]] = {}
        for scope in problem.required:
            # Unlabelled nodes are already out of the scope's groups, so their own ids need no care here.
            allowed_mask = holding_domains(problem, scope)[problem.arrays.key_ids(scope.key)]
            allowed = {problem.nodes[i] for i in np.flatnonzero(allowed_mask)}
            for g in scope.groups:
                keep[g] = keep.get(g, set(problem.groups[g].cap)) & allowed
        if all(len(keep.get(g.index, g.cap)) == len(g.cap) for g in problem.groups):
            return problem
        problem = problem.restricted(keep)
