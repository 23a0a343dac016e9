"""The decision step for queue-aware planning: the replay's waiting gangs handed to ``placement.batch`` together,
on the replay's free capacity, with the shapes of the gangs that arrived so far (the future-fit tier)."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Mapping, Sequence

from benchmarks.replay.decision import Decision, Free
from benchmarks.replay.workload import ReplayGang
from placement import ClusterView, GangRequest, SolveOptions, Status
from placement.batch import plan_batch
from placement.shapes import shapes_of
from topology import Topology

__all__ = ["BatchStep"]

RECENT = 200  # arrivals whose shapes the future-fit tier keeps room for


class BatchStep:
    """``BatchDecisionStep`` over ``placement.batch.plan_batch`` with heads of ``size`` gangs."""

    all_or_nothing = True

    def __init__(self, *, topology: Topology, size: int, options: SolveOptions) -> None:
        self.topology = topology
        self.size = size
        self.options = options
        self._recent: deque[GangRequest] = deque(maxlen=RECENT)

    def arrived(self, gang: ReplayGang) -> None:
        self._recent.append(gang.request)

    def completed(self, gang: ReplayGang) -> None:
        return None

    def evicted(self, gang: ReplayGang, pods: Collection[str]) -> None:
        return None

    def decide_batch(
        self, gangs: Sequence[tuple[ReplayGang, GangRequest]], free: Free
    ) -> tuple[Mapping[str, Decision], Sequence[str]]:
        requests = [remaining for _, remaining in gangs]
        view = ClusterView(self.topology, free, shapes_of(self._recent, self.topology))
        batch = plan_batch(requests, view, self.options, size=self.size)
        decisions = {
            key: Decision(bind=dict(result.assignment), placement_score=result.placement_score)
            for key, result in batch.results.items()
            if result.status is Status.PLACED
        }
        return decisions, batch.head
