"""The decision step over ``placement.solve``: the policy sees the replay's free capacity on the cluster's topology.

Pod-by-pod policies (``first-fit``, ``spread``) report the pods they could place even when the gang as a whole
did not fit; kube-scheduler without gang support would bind those, so this step binds them too.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from benchmarks.replay.decision import Decision, Free
from benchmarks.replay.workload import ReplayGang
from placement import ClusterView, GangRequest, SolveOptions, Status, solve
from topology import Topology

log = logging.getLogger(__name__)

POD_BY_POD = frozenset({"first-fit", "spread"})


def solve_options(policy: str, *, time_limit_seconds: float | None, workers: int | None) -> SolveOptions:
    """The policy's options, with the solver's own defaults wherever the bench does not override them."""
    defaults = SolveOptions(policy=policy)
    return SolveOptions(
        policy=policy,
        time_limit_seconds=defaults.time_limit_seconds if time_limit_seconds is None else time_limit_seconds,
        workers=defaults.workers if workers is None else workers,
    )


class SolveStep:
    """``DecisionStep`` calling ``placement.solve`` with one policy."""

    def __init__(
        self,
        *,
        policy: str,
        topology: Topology,
        time_limit_seconds: float | None = None,
        workers: int | None = None,
    ) -> None:
        self.policy = policy
        self.topology = topology
        self.all_or_nothing = policy not in POD_BY_POD
        self.options = solve_options(policy, time_limit_seconds=time_limit_seconds, workers=workers)
        self._invalid: set[str] = set()

    def arrived(self, gang: ReplayGang) -> None:
        return None

    def completed(self, gang: ReplayGang) -> None:
        return None

    def evicted(self, gang: ReplayGang, pods: Collection[str]) -> None:
        return None

    def decide(self, gang: ReplayGang, remaining: GangRequest, free: Free) -> Decision:
        result = solve(remaining, ClusterView(topology=self.topology, free=free), self.options)
        if result.status is Status.INVALID and gang.key not in self._invalid:
            self._invalid.add(gang.key)
            log.warning("gang refused as invalid policy=%s gang=%s reason=%s", self.policy, gang.key, result.reason)
        placed = result.status is Status.PLACED
        bind = dict(result.assignment) if placed or not self.all_or_nothing else {}
        return Decision(bind=bind, placement_score=result.placement_score if placed else None, reason=result.reason)
