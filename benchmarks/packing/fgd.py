"""FGD's fragmentation measure (Weng et al., "Beware of Fragmentation", USENIX ATC '23), for whole GPUs.

FGD judges a node by the typical tasks of the workload: for a task m that the node cannot run (not enough GPUs,
CPU or memory left), every free GPU of the node is a fragment; for one it can run, only the free GPUs too small
for it are (with whole GPUs, none). The node's fragmentation is the popularity-weighted sum over tasks, the
cluster's the sum over nodes:

    F = Σ_n Σ_m p_m · F_n(m),   F_n(m) = free GPUs of n if m does not fit n, else 0

Tasks here are the pods of the fill's gang templates (GPU pods only, as FGD's typical tasks are), each distinct
(GPUs, CPU, memory) demand weighted by its share of the pods. FGD counts a pod on its own: a pod that fits a
node counts nothing there even if its gang could never be placed — which is why we report it beside our own
measure (free GPUs no gang of the workload could use, ``benchmarks.replay.fragmentation``), not instead of it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from api.core import GPU
from placement import GangRequest

__all__ = ["fgd_fragmented_gpus", "typical_pods"]


Demand = tuple[tuple[str, int], ...]


def typical_pods(templates: Sequence[GangRequest]) -> dict[Demand, float]:
    """Each distinct GPU pod demand of the templates with its share of their GPU pods (popularity)."""
    counted: Counter[Demand] = Counter()
    for request in templates:
        for group in request.groups:
            if group.demand.get(GPU, 0) > 0:
                counted[tuple(sorted(group.demand.items()))] += len(group.pods)
    total = sum(counted.values())
    return {demand: count / total for demand, count in counted.items()} if total else {}


def fgd_fragmented_gpus(free: Mapping[str, Mapping[str, int]], tasks: Mapping[Demand, float]) -> float:
    """F over every node: the expected free GPUs a typical pod could not use."""
    total = 0.0
    for units in free.values():
        gpus = units.get(GPU, 0)
        if gpus <= 0:
            continue
        for demand, share in tasks.items():
            if any(units.get(resource, 0) < amount for resource, amount in demand):
                total += share * gpus
    return total
