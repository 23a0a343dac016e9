"""A brute-force oracle for queue-aware planning on tiny clusters: every way of starting some of the gangs (each
with any plan that fits it alone), kept when they fit together, judged by an objective written apart from
``placement.batch`` (priority classes, queue order, the single-gang oracle's tiers, FGD-style future fit)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from placement import ClusterView, GangRequest, GroupRequest
from tests.placement.oracle import GPU, Plan, all_plans, fragmented, tiers

Chosen = dict[str, Plan]  # gang key → its plan, for the gangs that start


def head(requests: Sequence[GangRequest]) -> list[GangRequest]:
    return sorted(requests, key=lambda r: (-r.priority, requests.index(r)))


def choices(requests: Sequence[GangRequest], view: ClusterView) -> Iterator[Chosen]:
    options = [[None, *all_plans(request, view)] for request in requests]
    for picked in itertools.product(*options):
        chosen = {r.key: plan for r, plan in zip(requests, picked, strict=True) if plan is not None}
        if _fits_together(requests, view, chosen):
            yield chosen


def _fits_together(requests: Sequence[GangRequest], view: ClusterView, chosen: Chosen) -> bool:
    load: dict[tuple[str, str], int] = {}
    for request in requests:
        plan = chosen.get(request.key)
        for group in request.groups:
            for node, count in (plan or {}).get(group.name, {}).items():
                for resource, units in group.demand.items():
                    load[(node, resource)] = load.get((node, resource), 0) + units * count
    return all(units <= view.free.get(node, {}).get(resource, 0) for (node, resource), units in load.items())


def value(requests: Sequence[GangRequest], view: ClusterView, chosen: Chosen) -> tuple[int, ...]:
    """Waiting GPUs per priority class (highest first), queue order of those waiting, each quality tier summed over
    the gangs that start (the single-gang oracle's, less best-effort pods and future fit), and future fit over
    all of them together."""
    ordered = head(requests)
    classes = sorted({r.priority for r in requests}, reverse=True)

    def weight(request: GangRequest) -> int:
        return max(1, sum(g.min_replicas * g.demand.get(GPU, 0) for g in request.groups))

    waiting = [sum(weight(r) for r in requests if r.priority == p and r.key not in chosen) for p in classes]
    order = sum(len(ordered) - rank for rank, r in enumerate(ordered) if r.key not in chosen)
    bare = ClusterView(view.topology, view.free)  # per-gang tiers without future fit
    quality: list[int] = []
    for request in requests:
        if request.key in chosen:
            found = tiers(request, bare, chosen[request.key])[:-1]  # best-effort pods missing: none, all guaranteed
            quality = [a + b for a, b in itertools.zip_longest(quality, found, fillvalue=0)]
    if not quality:
        quality = [0] * (len(tiers(requests[0], bare, {g.name: {} for g in requests[0].groups})) - 1)
    future = (_fragmented_together(requests, view, chosen),) if view.shapes else ()
    return (*waiting, order, *quality, *future)


def _fragmented_together(requests: Sequence[GangRequest], view: ClusterView, chosen: Chosen) -> int:
    """Future fit of all the started gangs at once: one gang of all their pods, judged by the oracle's measure."""
    merged: Plan = {}
    demand: dict[str, dict[str, int]] = {}
    for request in requests:
        for group in request.groups:
            name = f"{request.key}/{group.name}"
            demand[name] = dict(group.demand)
            merged[name] = dict(chosen.get(request.key, {}).get(group.name, {}))
    together = GangRequest("oracle", "together", tuple(GroupRequest(name, (), demand[name], 0) for name in merged), ())
    return fragmented(view, merged, together)
