"""Lower bounds on each objective tier, from free capacity alone (no search), composed from the tier families.

To place a group's ``minReplicas`` pods you need at least as many domains as it takes, largest first, to add up
to that many pods (per group, and per resource over the whole gang). The best-fit tiers are bounded given the
span tiers above them at their bounds (a plan that spans more domains is already worse, whatever its fit), so
the bound vector is a lexicographic bound: a plan that meets it is optimal. They serve three ends:
``placementScore`` (how far a plan is from the best it could conceivably be), the greedy shortcut (a greedy
plan that meets every bound is optimal, no solver needed), and the order in which candidate domains of a
required pack are searched. Each tier's own bound lives in its module (:mod:`placement.tiers`); this module runs
them in :data:`placement.objective.TIERS` order over groups of candidate nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from placement.arrays import Ints
from placement.objective import TIERS
from placement.problem import Problem
from placement.tiers.family import BoundInputs

__all__ = ["Bounds", "gang_bounds", "tier_bounds"]


def tier_bounds(problem: Problem, nodes: Ints | None = None, *, exact_fit: bool = True) -> tuple[int, ...] | None:
    """A lower bound per tier (see :mod:`placement.objective`) for plans using only the candidate nodes at
    indexes ``nodes`` (default: all); ``None`` when even this relaxation cannot place every ``minReplicas``.
    ``exact_fit=False`` skips the refinements (the set enumeration of the wholly-free-nodes tier: cheaper,
    looser)."""
    idx = np.arange(len(problem.nodes)) if nodes is None else nodes
    table, feasible = grouped_bounds(problem, idx, np.zeros(len(idx), np.int64), 1)
    if not feasible[0]:
        return None
    found = {name: int(column[0]) for name, column in table.items()}
    if exact_fit:
        for family in TIERS:
            found.update(family.refine(problem, idx, found))
    return tuple(found.values())


def grouped_bounds(
    problem: Problem, idx: Ints, groups: Ints, count: int
) -> tuple[dict[str, Ints], npt.NDArray[np.bool_]]:
    """The coarse tier bounds of every group of candidate nodes at once (``groups[i]``: the group of node
    ``idx[i]``, -1 for none), by tier name in priority order, and whether each group can hold every
    ``minReplicas`` on capacity sums at all. Only the nodes at ``idx`` are read."""
    inputs = BoundInputs(problem, idx, groups, count, np.ones(count, np.bool_))
    for family in TIERS:
        inputs.found.update(zip(family.names(problem), family.bounds(inputs), strict=True))
    return inputs.found, inputs.feasible


@dataclass(frozen=True)
class Bounds:
    """``per_tier``: each tier's own lower bound (for the score); ``lexicographic``: a bound on the whole tuple
    (for proving a plan optimal); ``by_domain``: per candidate domain of a gang-wide required pack, when there is
    one (for searching those domains best bound first)."""

    per_tier: tuple[int, ...]
    lexicographic: tuple[int, ...]
    by_domain: Mapping[str, tuple[int, ...]] | None = None  # without the exact best-fit refinement
    members: Mapping[str, Ints] | None = None  # candidate node indexes per domain, for refining on demand


def gang_bounds(problem: Problem, *, exact_fit: bool = True) -> Bounds | None:
    """Bounds that know about a gang-wide ``required`` pack: every plan lies inside one domain of its key, so
    the bound is the best over those domains of the bound within each. ``None``: no domain can hold the gang.
    ``exact_fit=False``: no refinement even without such a pack (cheaper, looser; see :func:`tier_bounds`)."""
    scope = next((s for s in problem.required if len(s.groups) == len(problem.groups)), None)
    if problem.guaranteed_pods == 0:
        scope = None  # nothing must be placed, so no domain must hold anything
    if scope is None:
        whole = tier_bounds(problem, exact_fit=exact_fit)
        return None if whole is None else Bounds(whole, whole)
    arrays = problem.arrays
    values, domain_of = np.unique(arrays.key_ids(scope.key), return_inverse=True)
    domain_of = domain_of.reshape(-1)
    names = arrays.key_names(scope.key)
    # Coarse per domain, all domains at once: the exact refinement is paid only for domains a search actually
    # reaches. Scope groups only run on labelled nodes, so an unlabelled node's own "domain" holds nothing of the
    # gang.
    table, feasible = grouped_bounds(problem, np.arange(len(domain_of)), domain_of, len(values))
    rows = np.column_stack(list(table.values()))
    order = np.argsort(domain_of, kind="stable")
    edges = np.searchsorted(domain_of[order], np.arange(len(values) + 1)).tolist()
    by_domain: dict[str, tuple[int, ...]] = {}
    members: dict[str, Ints] = {}
    kept = np.flatnonzero(feasible).tolist()
    for d, row in zip(kept, rows[kept].tolist(), strict=True):
        name = names[int(values[d])]
        if not name.startswith("<none>:"):
            by_domain[name] = tuple(row)
            members[name] = order[edges[d] : edges[d + 1]]
    if not by_domain:
        return None
    found = rows[[d for d in kept if not names[int(values[d])].startswith("<none>:")]]
    per_tier = tuple(int(v) for v in found.min(axis=0))
    return Bounds(per_tier, min(by_domain.values()), by_domain, members)
