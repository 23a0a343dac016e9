"""The problem's per-node facts as numpy arrays, so bounds over 10,000 nodes cost a few bincounts, not loops.

Index ``i`` is ``problem.nodes[i]`` (the candidate nodes). Domains at each level and values of each pack key
are numbered per array; a node lacking a pack key's label gets a number of its own.
"""

from __future__ import annotations

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

    def key_ids(self, key: str) -> Ints:
        """Numbered values of a pack key; unlabelled nodes each get their own number."""
        if key not in self._key_ids:
            nodes = self.problem.nodes
            self._key_ids[key] = _number([self.problem.key_value(n, key) or f"<none>:{n}" for n in nodes])[0]
        return self._key_ids[key]

    def fresh_domain_mask(self) -> npt.NDArray[np.bool_]:
        """Per domain id at the fresh level: is that domain wholly free."""
        level = self.problem.fresh_level
        assert level is not None
        fresh = self.problem.fresh_domains
        return np.fromiter((d in fresh for d in self.level_names[level]), np.bool_, len(self.level_names[level]))
