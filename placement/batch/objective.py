"""The batch objective, tiers compared lexicographically (smaller is better):

1. ``waiting:<priority>``, one per priority class, highest first: guaranteed GPUs of that class left waiting — so
   no lower-priority gang takes capacity a higher-priority one could use now, and within a class as many GPUs
   start as can;
2. ``queue-order``: Σ over the gangs left waiting of (head size − rank): of plans that start as many GPUs of every
   class, the one that starts the older gangs;
3. each quality tier of :mod:`placement.objective` (``preferred``, ``span:<level>``, ``fresh:<level>``,
   ``fresh:host``), summed over the gangs that start, each judged against the free capacity the batch began with;
4. ``future-fit``, over what all of them use together, when the view names recent shapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from placement.batch.bounds import fresh_domains_bound, fresh_nodes_bound
from placement.batch.queue import Queued
from placement.future_fit import FutureFit, usage_of
from placement.objective import Counts, quality_names, quality_values, tier_names
from topology.graph import GPU_RESOURCE

__all__ = ["BatchObjective"]


class BatchObjective:
    def __init__(self, gangs: Sequence[Queued], future: FutureFit | None) -> None:
        self.gangs = list(gangs)
        self.classes = sorted({g.request.priority for g in gangs}, reverse=True)
        self.quality = quality_names(gangs[0].problem) if gangs else ()
        self.future = future
        self._lower: tuple[int, ...] | None = None

    def names(self) -> tuple[str, ...]:
        waiting = tuple(f"waiting:{p}" for p in self.classes)
        return (*waiting, "queue-order", *self.quality, *(("future-fit",) if self.future else ()))

    def order_weight(self, gang: Queued) -> int:
        return len(self.gangs) - gang.rank

    def lower(self) -> tuple[int, ...]:
        """A lexicographic lower bound: nothing waits, each gang's quality tiers at their own bounds (what it could
        reach alone) but for the wholly free domains and nodes they break, bounded for the head together
        (:mod:`placement.batch.bounds`), and no GPU fragmented. A plan that meets it is optimal."""
        if self._lower is None:
            self._lower = self._bound()
        return self._lower

    def _bound(self) -> tuple[int, ...]:
        quality = [0] * len(self.quality)
        for gang in self.gangs:
            found = dict(zip(tier_names(gang.problem), gang.bounds.per_tier, strict=True))
            for i, name in enumerate(self.quality):
                quality[i] += found[name]
        fresh = f"fresh:{self.gangs[0].problem.fresh_level}" if self.gangs else None
        if fresh in self.quality:
            quality[self.quality.index(fresh)] = fresh_domains_bound(self.gangs)
        if "fresh:host" in self.quality:
            quality[self.quality.index("fresh:host")] = fresh_nodes_bound(self.gangs)
        return (*([0] * len(self.classes)), 0, *quality, *((0,) if self.future else ()))

    def evaluate(self, plans: Mapping[int, Counts]) -> tuple[int, ...]:
        """``plans``: queue position → counts of each gang that starts (the others wait)."""
        waiting = [
            sum(g.weight for g in self.gangs if g.request.priority == p and g.position not in plans)
            for p in self.classes
        ]
        order = sum(self.order_weight(g) for g in self.gangs if g.position not in plans)
        quality = [0] * len(self.quality)
        usage: dict[str, int] = {}
        for gang in self.gangs:
            counts = plans.get(gang.position)
            if counts is None:
                continue
            for i, value in enumerate(quality_values(gang.problem, counts)):
                quality[i] += value
            gpus = [g.demand.get(GPU_RESOURCE, 0) for g in gang.problem.groups]
            for node, units in usage_of(counts, gpus).items():
                usage[node] = usage.get(node, 0) + units
        future = (self.future.fragmented(usage),) if self.future else ()
        return (*waiting, order, *quality, *future)
