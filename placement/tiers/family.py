"""What every tier family provides, and the inputs its parts read.

A *tier* is one integer to minimise; a *family* yields one or more (``span`` yields one per topology level). The
objective is the tuple of every family's tiers in :data:`placement.objective.TIERS` order, compared
lexicographically.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from placement.arrays import Ints
from placement.grouping import Pools
from placement.model_vars import ModelVars, TierExpr
from placement.problem import Problem

__all__ = ["BoundInputs", "Counts", "Need", "PlanFacts", "TierFamily", "fewest_pools", "needs_of", "split"]

Counts = Mapping[tuple[int, str], int]  # (group index, node) → pods of that group on that node
Need = tuple[Ints, int]  # (what each candidate node can contribute, the amount the chosen domains must add up to)


@dataclass(frozen=True)
class PlanFacts:
    """A plan and what every family reads of it, computed once per evaluation."""

    counts: Counts
    used: frozenset[tuple[int, str]]  # (group, node) pairs holding pods
    nodes: frozenset[str]  # nodes holding pods of the gang
    placed: tuple[int, ...]  # pods placed per group

    @classmethod
    def of(cls, problem: Problem, counts: Counts) -> PlanFacts:
        used = frozenset((g, n) for (g, n), c in counts.items() if c > 0)
        placed = [0] * len(problem.groups)
        for (g, _), c in counts.items():
            placed[g] += c
        return cls(counts, used, frozenset(n for _, n in used), tuple(placed))


@dataclass
class BoundInputs:
    """The candidate nodes at ``idx``, split into ``count`` groups (``groups[i]``: the group of node ``idx[i]``),
    whose bounds are computed together. ``feasible`` starts true and a family clears it for a group that cannot
    hold the gang at all; ``found`` holds the bounds of the families before this one, by tier name."""

    problem: Problem
    idx: Ints
    groups: Ints
    count: int
    feasible: npt.NDArray[np.bool_]
    found: dict[str, Ints] = field(default_factory=dict)
    _pools: dict[str, Pools] = field(default_factory=dict)

    def needs(self, groups: Iterable[int] | None = None) -> list[Need]:
        """The needs of ``groups`` (default: the whole gang), restricted to the nodes at ``idx``."""
        chosen = range(len(self.problem.groups)) if groups is None else groups
        return [(capacity[self.idx], amount) for capacity, amount in needs_of(self.problem, chosen)]

    def pools(self, ids: Ints, *, key: str) -> Pools:
        """Nodes pooled per (group, value of ``ids``), cached under ``key`` (a level or a label key)."""
        if key not in self._pools:
            self._pools[key] = Pools(self.groups, ids[self.idx], self.count)
        return self._pools[key]

    def level_pools(self, level: str) -> Pools:
        return self.pools(self.problem.arrays.level_ids[level], key=f"level:{level}")


def needs_of(problem: Problem, groups: Iterable[int]) -> list[Need]:
    """What a set of domains must hold: each group's minimum in pods, and the groups' summed minimum demand per
    resource (counting only nodes where some of those groups may run)."""
    arrays = problem.arrays
    chosen = [g for g in groups if problem.groups[g].min > 0]
    cached = arrays.needs.get(tuple(chosen))
    if cached is not None:
        return cached
    needs: list[Need] = [(arrays.cap[g], problem.groups[g].min) for g in chosen]
    for resource in problem.resources:
        amount = sum(problem.groups[g].min * problem.groups[g].demand.get(resource, 0) for g in chosen)
        if amount > 0:
            hosts = np.zeros(len(problem.nodes), np.bool_)
            for g in chosen:
                if resource in problem.groups[g].demand:
                    hosts |= arrays.cap[g] > 0
            needs.append((np.where(hosts, arrays.free[resource], 0), amount))
    arrays.needs[tuple(chosen)] = needs
    return needs


def split(needs: list[Need]) -> tuple[list[Ints], Ints]:
    """Needs as (capacity vectors, amounts as a column) for the grouped calls of ``placement.grouping``."""
    return [capacity for capacity, _ in needs], np.array([amount for _, amount in needs], np.int64).reshape(-1, 1)


def fewest_pools(needs: list[Need], pools: Pools) -> Ints:
    """Per group, the fewest pools (largest first) that hold every need; ``NEVER`` when they cannot."""
    if not needs:
        return np.zeros(pools.count, np.int64)
    capacities, amounts = split(needs)
    return np.asarray(pools.ranked(capacities).fewest(amounts).max(axis=0))


class TierFamily(ABC):
    """One family of objective tiers.

    Called: ``names`` and ``evaluate`` whenever a policy compares or scores a plan; ``bounds`` once per search,
    for every candidate domain of a required pack at once; ``refine`` for the one domain a search is about to
    solve; ``model`` when a CP-SAT model is built. Promises, for every plan: ``evaluate`` gives one value per
    name; no plan inside a group of nodes scores below that group's ``bounds`` (given the earlier families at
    their bounds, as the lexicographic order allows); the model's expressions equal ``evaluate`` at every
    solution where the solver has pushed them down.
    """

    quality: ClassVar[bool] = True  # whether the tiers count in placementScore (how well placed, not how much)

    @abstractmethod
    def names(self, problem: Problem) -> tuple[str, ...]: ...

    @abstractmethod
    def evaluate(self, problem: Problem, plan: PlanFacts) -> tuple[int, ...]: ...

    @abstractmethod
    def bounds(self, inputs: BoundInputs) -> list[Ints]:
        """One array per tier, one lower bound per group of ``inputs``."""

    @abstractmethod
    def model(self, mv: ModelVars) -> list[TierExpr]: ...

    def refine(self, problem: Problem, idx: Ints, found: dict[str, int]) -> dict[str, int]:
        """Tighter bounds for the one group of candidates at ``idx``, given every family's coarse ones in
        ``found``; only the tiers it tightens."""
        return {}
