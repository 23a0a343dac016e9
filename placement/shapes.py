"""The gang shapes a cluster has been seeing, as the future-fit tier reads them.

A :class:`~placement.request.WorkloadShape` is what a future gang like a past one will ask of one topology
domain: ``gpus`` GPUs in pods of ``pod_gpus``, inside one domain of ``level`` (the level of its widest
``required`` pack, else of its widest ``preferred`` one, else the NVLink level: where it will want to sit).
``weight`` is how often it came.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from placement.request import GangRequest, PackScope, WorkloadShape
from topology import Topology
from topology.graph import GPU_RESOURCE
from topology.levels import HOSTNAME_KEY, NVLINK_LEVEL

__all__ = ["shape_of", "shapes_of"]


def shape_of(request: GangRequest, topology: Topology) -> WorkloadShape | None:
    """The shape of a gang's guaranteed GPU pods; ``None`` for a gang that asks for no GPUs."""
    gpus = {g.name: g.min_replicas * g.demand.get(GPU_RESOURCE, 0) for g in request.groups}
    if not any(gpus.values()):
        return None

    def weight(pack: PackScope) -> int:
        return sum(gpus.get(name, 0) for name in pack.groups)

    required = [(p, p.required) for p in request.packs if p.required and weight(p) > 0]
    preferred = [(p, p.preferred) for p in request.packs if p.preferred and weight(p) > 0]
    names = {g.name for g in request.groups}
    level = _default_level(topology)
    for packs in (required, preferred):
        if packs:
            scope, key = max(packs, key=lambda item: weight(item[0]))
            names, level = set(scope.groups), _level_of(key, topology)
            break
    pod_gpus = max(g.demand.get(GPU_RESOURCE, 0) for g in request.groups if g.name in names)
    return WorkloadShape(level, pod_gpus, sum(gpus[name] for name in names))


def shapes_of(requests: Iterable[GangRequest], topology: Topology) -> tuple[WorkloadShape, ...]:
    """Distinct shapes of ``requests`` with how many of them had each, most frequent first."""
    counted = Counter(shape for request in requests if (shape := shape_of(request, topology)) is not None)
    return tuple(
        WorkloadShape(s.level, s.pod_gpus, s.gpus, n)
        for s, n in sorted(counted.items(), key=lambda item: (-item[1], item[0].level, item[0].gpus))
    )


def _level_of(key: str, topology: Topology) -> str:
    """The topology level a pack key names; a key that names no level falls back to the NVLink level."""
    for level in topology.levels:
        if key in level.keys or (key == HOSTNAME_KEY and level is topology.levels[-1]):
            return level.name
    return _default_level(topology)


def _default_level(topology: Topology) -> str:
    """Where a gang with no pack wants to be: one NVLink domain, or one node when the cluster has none."""
    return NVLINK_LEVEL if topology.has_level(NVLINK_LEVEL) else topology.levels[-1].name
