"""A running tally of free capacity while a greedy policy places pods one batch at a time."""

from __future__ import annotations

from collections.abc import Iterable

from placement.problem import Problem

__all__ = ["Tally"]


class Tally:
    """Free units per node for the gang's resources, debited as pods are placed; ``counts`` is the plan so far."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.free: dict[str, dict[str, int]] = {}  # touched nodes only: large clusters stay cheap to copy
        self.counts: dict[tuple[int, str], int] = {}
        self.placed = [0] * len(problem.groups)

    def fits(self, group: int, node: str) -> int:
        """How many more pods of ``group`` fit on ``node`` now."""
        spec = self.problem.groups[group]
        if node not in spec.cap:
            return 0
        free = self.free.get(node) or {r: self.problem.free(node, r) for r in spec.demand}
        fits = min((free[r] // u for r, u in spec.demand.items()), default=len(spec.pods))
        return min(fits, spec.cap[node])

    def place(self, group: int, node: str, pods: int) -> None:
        spec = self.problem.groups[group]
        free = self.free.setdefault(node, {r: self.problem.free(node, r) for r in self.problem.resources})
        for r, u in spec.demand.items():
            free[r] -= u * pods
        key = (group, node)
        self.counts[key] = self.counts.get(key, 0) + pods
        self.placed[group] += pods

    def fill(self, group: int, nodes: Iterable[str], want: int) -> int:
        """Place up to ``want`` pods of ``group`` on ``nodes`` in the order given; returns how many it placed."""
        placed = 0
        for node in nodes:
            if placed >= want:
                break
            take = min(self.fits(group, node), want - placed)
            if take > 0:
                self.place(group, node, take)
                placed += take
        return placed

    def copy(self) -> Tally:
        twin = Tally(self.problem)
        twin.free = {n: dict(f) for n, f in self.free.items()}
        twin.counts = dict(self.counts)
        twin.placed = list(self.placed)
        return twin

    def used_nodes(self) -> set[str]:
        return {n for (_, n), c in self.counts.items() if c > 0}
