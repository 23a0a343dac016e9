"""One fill: gangs drawn (seeded) from the templates, placed one at a time on what the earlier ones left, until the
first one the policy cannot place. Every policy sees the same draws for a seed, so runs differ only by placement
until their first failure."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from api.core import GPU
from benchmarks.packing.fgd import Demand, fgd_fragmented_gpus
from benchmarks.replay.quality import honours_required
from placement import ClusterView, GangRequest, SolveOptions, Status, WorkloadShape, solve, violations
from topology import Topology

__all__ = ["FillRun", "fill"]

Free = Mapping[str, Mapping[str, int]]


@dataclass
class FillRun:
    """``placed``: gangs placed before the first failure (``against_required`` of them against a required pack
    constraint: not what their owner asked for, as the replay counts them); ``allocated_share`` and
    ``unallocated_gpus``: the cluster's GPUs in use (share) and free at that moment; ``fgd_fragmented_gpus``: FGD's
    measure then; ``fragmented_gpus``: ours (free GPUs no template could use then); ``curve``: (gangs placed,
    allocated share) after each one."""

    seed: int
    placed: int = 0
    against_required: int = 0  # of them, placed against a required pack (topology-blind policies do that)
    allocated_share: float = 0.0
    unallocated_gpus: int = 0
    fgd_fragmented_gpus: float = 0.0
    fragmented_gpus: int = 0
    first_failure: str = ""
    curve: list[tuple[int, float]] = field(default_factory=list)
    decision_seconds: list[float] = field(default_factory=list)


def fill(
    templates: Sequence[GangRequest],
    *,
    topology: Topology,
    start: Free,
    seed: int,
    options: SolveOptions,
    shapes: tuple[WorkloadShape, ...] = (),
    tasks: Mapping[Demand, float],
    fragmentation: Callable[[Sequence[GangRequest], Free], int],
) -> FillRun:
    """Fill from ``start`` (free units per node) until a drawn gang does not fit. ``shapes`` go into the view (the
    future-fit tier reads them); ``tasks`` are FGD's typical pods; ``fragmentation`` is our measure."""
    rng = random.Random(f"fill/{seed}")
    free = {node: dict(units) for node, units in start.items()}
    capacity = sum(host.allocatable.get(GPU, 0) for host in topology.hosts.values())
    run = FillRun(seed)

    def share() -> float:
        return 1 - sum(units.get(GPU, 0) for units in free.values()) / capacity if capacity else 0.0

    run.curve.append((0, share()))
    # Capacity only shrinks, so a fill ends; the cap guards against templates that ask for nothing.
    while run.placed < 100_000:
        request = _instance(rng.choice(templates), run.placed)
        view = ClusterView(topology, free, shapes)
        began = time.perf_counter()
        result = solve(request, view, options)
        run.decision_seconds.append(time.perf_counter() - began)
        problems = violations(request, view, result, partial_ok=True, packs_ok=options.policy in _BLIND)
        if problems:
            raise RuntimeError(f"fill seed {seed}, {options.policy}: invalid result for {request.key}: {problems}")
        if result.status != Status.PLACED:
            run.first_failure = f"{request.key} ({_gpus(request)} GPUs): {result.reason}"
            break
        run.against_required += not honours_required(request, result.assignment, topology)
        demand = {pod: group.demand for group in request.groups for pod in group.pods}
        for pod, node in result.assignment.items():
            for resource, units in demand[pod].items():
                free[node][resource] = free[node].get(resource, 0) - units
        run.placed += 1
        run.curve.append((run.placed, share()))
    run.allocated_share = share()
    run.unallocated_gpus = sum(units.get(GPU, 0) for units in free.values())
    run.fgd_fragmented_gpus = fgd_fragmented_gpus(free, tasks)
    run.fragmented_gpus = fragmentation(templates, free)
    return run


_BLIND = frozenset({"first-fit", "spread", "gang-best-fit"})  # policies that do not read pack constraints


def _instance(template: GangRequest, index: int) -> GangRequest:
    """A fresh gang of the template's shape, with pod names of its own."""
    groups = tuple(
        replace(group, pods=tuple(f"fill/{index}-{group.name}-{i}" for i in range(len(group.pods))))
        for group in template.groups
    )
    return replace(template, namespace="fill", name=f"{template.name}-{index}", groups=groups)


def _gpus(request: GangRequest) -> int:
    return sum(g.min_replicas * g.demand.get(GPU, 0) for g in request.groups)
