"""The batch's greedy warm start: each gang of the head in order (priority, then age), placed by the topology
greedy on what the gangs before it left. Higher-priority gangs go first, so the start already never lets a
lower-priority gang take what a higher one could use; the model then improves on it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from placement.arrays import HostArrays
from placement.batch.queue import Queued
from placement.explain import relaxation_reason
from placement.greedy.topology_greedy import topology_greedy
from placement.objective import Counts
from placement.problem import Problem
from placement.prune import prune
from placement.request import ClusterView

__all__ = ["Residual", "warm_start"]


class Residual:
    """The view less what the plans so far use, with host arrays to match (label tables shared)."""

    def __init__(self, view: ClusterView, hosts: HostArrays) -> None:
        self.view = view
        self.hosts = hosts

    def problem(self, gang: Queued, *, anywhere: bool = False) -> Problem:
        """The gang resolved on what is left, on the nodes the batch may use for it (``anywhere``: on every node),
        its request as the batch decides it: guaranteed pods only."""
        return Problem(gang.problem.request, self.view, self.hosts, None if anywhere else gang.near)

    def debit(self, problem: Problem, counts: Counts) -> Residual:
        usage: dict[str, dict[str, int]] = {}
        for (g, node), pods in counts.items():
            for resource, amount in problem.groups[g].demand.items():
                vector = usage.setdefault(node, {})
                vector[resource] = vector.get(resource, 0) + amount * pods
        free: dict[str, Mapping[str, int]] = dict(self.view.free)
        for node, used in usage.items():
            before = free.get(node, {})
            free[node] = {r: before.get(r, 0) - used.get(r, 0) for r in set(before) | set(used)}
        view = ClusterView(self.view.topology, free, self.view.shapes, replaced=self.view.replaced)  # vectors new
        return Residual(view, self.hosts.debited(view, usage))


def warm_start(gangs: Sequence[Queued], start: Residual) -> tuple[dict[int, Counts], Residual]:
    """Plans (queue position → counts) for the gangs the greedy could place, and what they leave. A gang that
    does not fit its neighbourhood is tried on every node (its plan may lie outside: the caller widens the
    neighbourhood to it)."""
    plans: dict[int, Counts] = {}
    residual = start
    for gang in sorted(gangs, key=lambda g: g.rank):
        for anywhere in (False, True) if gang.near is not None else (True,):
            problem = residual.problem(gang, anywhere=anywhere)
            plan = topology_greedy(prune(problem), spans_first=True) if relaxation_reason(problem) is None else None
            if plan is not None:
                plans[gang.position] = dict(plan)
                residual = residual.debit(problem, plan)
                break
    return plans, residual
