"""The placement objective: the tier families in priority order, and the tuple they form on a plan.

A plan is judged by a tuple of tiers, compared lexicographically (smaller is better), in ARCHITECTURE.md's order:

1. ``preferred`` — for each ``preferred`` pack scope, domains of its key the scope's pods touch beyond one;
2. ``span:<level>`` — domains touched at each level below the host, narrowest first (NVLink before block
   before zone);
3. ``fresh:<level>`` then ``fresh:host`` — wholly free NVLink domains (the narrowest level when there is no
   NVLink level) and wholly free nodes the gang breaks into: best fit fills partly used ones first;
4. ``extras-missing`` — best-effort pods (beyond ``minReplicas``) left unplaced;
5. ``future-fit`` — when the view names the gang shapes the cluster keeps seeing: domains that could host one of
   them and no longer can, weighted by how often each came.

Each family lives in its own module of :mod:`placement.tiers` (name, CP-SAT expression, value, lower bound);
:data:`TIERS` is the one place their order is set. The model (``placement.cpsat.solver``), the bounds
(``placement.bounds``), the score and every policy's plan comparison read it from here. The tests judge it with an
evaluator of their own (``tests/placement/oracle.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

from placement.problem import Problem
from placement.tiers.domains_spanned import DomainsSpanned
from placement.tiers.extras_missing import ExtrasMissing
from placement.tiers.family import Counts, PlanFacts, TierFamily
from placement.tiers.fresh_domains import FreshDomains
from placement.tiers.fresh_nodes import FreshNodes
from placement.tiers.future_fit import FutureFitTier
from placement.tiers.preferred_pack import PreferredPack

__all__ = [
    "TIERS",
    "Counts",
    "assignment_of",
    "counts_of",
    "evaluate",
    "quality_mask",
    "quality_names",
    "quality_values",
    "tier_names",
]

TIERS: tuple[TierFamily, ...] = (
    PreferredPack(),
    DomainsSpanned(),
    FreshDomains(),
    FreshNodes(),
    ExtrasMissing(),
    FutureFitTier(),
)


def tier_names(problem: Problem) -> tuple[str, ...]:
    return tuple(name for family in TIERS for name in family.names(problem))


def quality_mask(problem: Problem) -> tuple[bool, ...]:
    """Per tier: whether it counts in placementScore (see :mod:`placement.score`)."""
    return tuple(family.quality for family in TIERS for _ in family.names(problem))


def evaluate(problem: Problem, counts: Counts) -> tuple[int, ...]:
    plan = PlanFacts.of(problem, counts)
    return tuple(value for family in TIERS for value in family.evaluate(problem, plan))


def quality_names(problem: Problem) -> tuple[str, ...]:
    """The tiers that say how well a gang is placed (those placementScore counts), in priority order."""
    return tuple(name for family in TIERS if family.quality for name in family.names(problem))


def quality_values(problem: Problem, counts: Counts) -> tuple[int, ...]:
    """The plan's value on each of :func:`quality_names`."""
    plan = PlanFacts.of(problem, counts)
    return tuple(value for family in TIERS if family.quality for value in family.evaluate(problem, plan))


def counts_of(problem: Problem, assignment: Mapping[str, str]) -> dict[tuple[int, str], int]:
    """Per (group, node) pod counts of a pod → node assignment; pods not in the gang are ignored."""
    group_of = {pod: g.index for g in problem.groups for pod in g.pods}
    counts: dict[tuple[int, str], int] = {}
    for pod, node in assignment.items():
        if pod in group_of:
            key = (group_of[pod], node)
            counts[key] = counts.get(key, 0) + 1
    return counts


def assignment_of(problem: Problem, counts: Counts) -> dict[str, str]:
    """Name the pods of a counts plan: within a group pods are interchangeable, so the first pods in the
    group's order take the first nodes (in name order), guaranteed members before best-effort extras."""
    assignment: dict[str, str] = {}
    for group in problem.groups:
        pods = iter(group.pods)
        for node in sorted(n for (g, n), c in counts.items() if g == group.index and c > 0):
            for _ in range(counts[(group.index, node)]):
                assignment[next(pods)] = node
    return assignment
