"""The baseline policies the benchmark compares ``cpsat`` against, each as its namesake would place the gang.

``first-fit`` and ``spread`` place pod by pod with no gang semantics and ignore pack constraints, as
kube-scheduler does without gang support; they may return a partial assignment (see :mod:`placement.solve`).
``gang-best-fit`` is all-or-nothing but topology-blind; ``topology-greedy`` is all-or-nothing and packs the
tightest domain first.
"""

from __future__ import annotations

import heapq

from placement.explain import explain_infeasible, relaxation_reason
from placement.greedy.extras import add_extras
from placement.greedy.tally import Tally
from placement.greedy.topology_greedy import topology_greedy
from placement.objective import Counts
from placement.outcome import planned, refused
from placement.problem import Problem
from placement.request import Result, SolveOptions, Status

__all__ = ["first_fit", "gang_best_fit", "spread", "topology_greedy_policy"]


def _pod_by_pod_result(problem: Problem, tally: Tally, policy: str) -> Result:
    short = [g for g in problem.groups if tally.placed[g.index] < g.min]
    if not short:
        return planned(problem, tally.counts)
    missing = "; ".join(f"group {g.name} got {tally.placed[g.index]} of {g.min} guaranteed pods" for g in short)
    return planned(
        problem,
        tally.counts,
        status=Status.INFEASIBLE,
        reason=f"{policy} placed pods one by one and left the gang short: {missing}",
    )


def first_fit(problem: Problem, options: SolveOptions) -> Result:
    """Each pod on the first node, in name order, with room for it."""
    tally = Tally(problem)
    for group in problem.groups:
        # A node that cannot take a pod now never can later (capacity only shrinks), so one cursor suffices.
        nodes = sorted(group.cap)
        cursor = 0
        for _ in group.pods:
            while cursor < len(nodes) and tally.fits(group.index, nodes[cursor]) == 0:
                cursor += 1
            if cursor == len(nodes):
                break
            tally.place(group.index, nodes[cursor], 1)
    return _pod_by_pod_result(problem, tally, "first-fit")


def _least_allocated(problem: Problem, tally: Tally, group: int, node: str) -> float:
    """kube-scheduler's LeastAllocated score after placing one more pod: mean free fraction over resources."""
    demand = problem.groups[group].demand
    allocatable = problem.topology.hosts[node].allocatable
    fractions = []
    for resource, units in demand.items():
        total = allocatable.get(resource, 0) or problem.free(node, resource) or 1
        free = tally.free.get(node, {}).get(resource, problem.free(node, resource))
        fractions.append((free - units) / total)
    return sum(fractions) / len(fractions) if fractions else 0.0


def spread(problem: Problem, options: SolveOptions) -> Result:
    """Each pod on the node left least allocated after it, as kube-scheduler's default scoring does."""
    tally = Tally(problem)
    for group in problem.groups:
        # Only the node just used changes score, so a heap with the stale entry re-pushed stays exact.
        heap = [(-_least_allocated(problem, tally, group.index, n), n) for n in group.cap]
        heapq.heapify(heap)
        for _ in group.pods:
            while heap:
                score, node = heap[0]
                if tally.fits(group.index, node) == 0:
                    heapq.heappop(heap)
                    continue
                current = -_least_allocated(problem, tally, group.index, node)
                if current != score:
                    heapq.heapreplace(heap, (current, node))
                    continue
                tally.place(group.index, node, 1)
                break
            else:
                break
    return _pod_by_pod_result(problem, tally, "spread")


def gang_best_fit(problem: Problem, options: SolveOptions) -> Result:
    """All-or-nothing, topology-blind: each group onto the nodes with the least free primary resource first."""
    reason = relaxation_reason(problem)
    if reason is not None:
        return refused(reason)
    tally = Tally(problem)

    def best_fit_order(group: int) -> list[str]:
        def left(node: str) -> int:
            return tally.free.get(node, {}).get(problem.primary, problem.free(node, problem.primary))

        return sorted(problem.groups[group].cap, key=lambda n: (left(n), n))

    ordered = sorted(problem.groups, key=lambda g: -g.demand.get(problem.primary, 0))
    for group in ordered:
        if tally.fill(group.index, best_fit_order(group.index), group.min) < group.min:
            return refused(f"gang-best-fit could not place group {group.name}'s {group.min} guaranteed pods")
    for group in ordered:
        tally.fill(group.index, best_fit_order(group.index), group.extras)
    return planned(problem, tally.counts)


def topology_greedy_policy(problem: Problem, options: SolveOptions) -> Result:
    """The whole gang if it fits as one, else guaranteed pods by the topology greedy and then extras where they
    fit (as ``cpsat`` does)."""
    reason = relaxation_reason(problem)
    if reason is None and any(g.extras for g in problem.groups):
        whole = topology_greedy(problem.requiring([len(g.pods) for g in problem.groups]))
        if whole is not None:  # every pod fits as one gang: pack them together, as cpsat does
            return planned(problem, whole)
    guaranteed = problem.guaranteed()
    if reason is None and guaranteed.guaranteed_pods == 0:
        plan: Counts | None = {}  # nothing guaranteed (best-effort pods asked for alone): placing none is a plan
    else:
        plan = topology_greedy(guaranteed) if reason is None else None
    if plan is None:
        return refused(reason or f"topology-greedy found no domain to hold the gang ({explain_infeasible(problem)})")
    return planned(problem, add_extras(problem, plan))
