"""The problem's per-node facts as numpy arrays, so bounds over 10,000 nodes cost a few bincounts, not loops.

Index ``i`` is ``problem.nodes[i]`` (the candidate nodes). Domains at each level and values of each pack key
are numbered per array; a node lacking a pack key's label gets a number of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from placement.problem import Problem

__all__ = ["Ints", "NodeArrays"]

Ints = npt.NDArray[np.int64]


def _number(values: list[str]) -> tuple[Ints, list[str]]:
    ids: dict[str, int] = {}
    numbered = np.fromiter((ids.setdefault(v, len(ids)) for v in values), dtype=np.int64, count=len(values))
    return numbered, list(ids)


@dataclass
class NodeArrays:
    problem: Problem
    cap: list[Ints] = field(init=False)  # per group: pods of it a node holds alone (0 if not a candidate)
    free: dict[str, Ints] = field(init=False)  # per resource: free units
    fresh: npt.NDArray[np.bool_] = field(init=False)
    level_ids: dict[str, Ints] = field(init=False)
    level_names: dict[str, list[str]] = field(init=False)
    _key_ids: dict[str, Ints] = field(init=False, default_factory=dict)
    _fresh_mask: npt.NDArray[np.bool_] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        problem = self.problem
        nodes = problem.nodes
        self.cap = [np.fromiter((g.cap.get(n, 0) for n in nodes), np.int64, len(nodes)) for g in problem.groups]
        self.free = {
            r: np.fromiter((problem.free(n, r) for n in nodes), np.int64, len(nodes)) for r in problem.resources
        }
        self.fresh = np.fromiter((n in problem.fresh_nodes for n in nodes), np.bool_, len(nodes))
        self.level_ids, self.level_names = {}, {}
        for level in problem.span_levels:
            self.level_ids[level], self.level_names[level] = _number([problem.domain(n, level) for n in nodes])

    def subset(self, problem: Problem, parent_nodes: Sequence[str]) -> NodeArrays:
        """The arrays of ``problem`` (a restriction of this one's) by slicing, not rebuilding: domain numbers
        stay the parent's, so names still resolve through ``level_names``."""
        position = {n: i for i, n in enumerate(parent_nodes)}
        idx = np.fromiter((position[n] for n in problem.nodes), np.int64, len(problem.nodes))
        twin = object.__new__(NodeArrays)
        twin.problem = problem
        twin.cap = [
            np.where(np.fromiter((n in g.cap for n in problem.nodes), np.bool_, len(idx)), cap[idx], 0)
            for g, cap in zip(problem.groups, self.cap, strict=True)
        ]
        twin.free = {r: a[idx] for r, a in self.free.items()}
        twin.fresh = self.fresh[idx]
        twin.level_ids = {lv: a[idx] for lv, a in self.level_ids.items()}
        twin.level_names = self.level_names
        twin._key_ids = {k: a[idx] for k, a in self._key_ids.items()}
        twin._fresh_mask = self._fresh_mask
        return twin

    def key_ids(self, key: str) -> Ints:
        """Numbered values of a pack key; unlabelled nodes each get their own number."""
        if key not in self._key_ids:
            nodes = self.problem.nodes
            self._key_ids[key] = _number([self.problem.key_value(n, key) or f"<none>:{n}" for n in nodes])[0]
        return self._key_ids[key]

    def fresh_domain_mask(self) -> npt.NDArray[np.bool_]:
        """Per domain id at the fresh level: is that domain wholly free."""
        if self._fresh_mask is None:
            level = self.problem.fresh_level
            assert level is not None
            fresh, names = self.problem.fresh_domains, self.level_names[level]
            self._fresh_mask = np.fromiter((d in fresh for d in names), np.bool_, len(names))
        return self._fresh_mask
