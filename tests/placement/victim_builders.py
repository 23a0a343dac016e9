"""Builders for preemption tests: victim gangs pod by pod, and a view in which they hold their capacity.

running("v/a", priority=1).min("w", 2).pods("z0c0h0", "z0c0h1", gpus=8)
reserved("v/r", priority=5).pods("z0c1h0", gpus=8)
solo("v/s", "z0c1h1", gpus=1, priority=0)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Self

from placement import ClusterView, GangRequest
from placement.preemption import Victim, VictimGang
from topology import HostSpec, Topology

GPU = "nvidia.com/gpu"
PREEMPTOR_PRIORITY = 10


class VictimGangBuilder:
    def __init__(self, key: str, priority: int, *, is_reserved: bool = False) -> None:
        self._key = key
        self._priority = priority
        self._reserved = is_reserved
        self._min: dict[str, int] = {}
        self._victims: list[Victim] = []

    def min(self, group: str, count: int) -> Self:
        self._min[group] = count
        return self

    def pods(self, *nodes: str, gpus: int, group: str = "w") -> Self:
        """One pod of ``gpus`` GPUs on each of ``nodes`` (a node named twice holds two), keys ``<gang>-<n>``."""
        for node in nodes:
            key = f"{self._key}-{len(self._victims)}"
            self._victims.append(Victim(key, node, {GPU: gpus}, self._key, group))
        return self

    def gang(self) -> VictimGang:
        return VictimGang(self._key, self._priority, dict(self._min), self._reserved)

    def victims(self) -> list[Victim]:
        return list(self._victims)


def running(key: str, *, priority: int) -> VictimGangBuilder:
    return VictimGangBuilder(key, priority)


def reserved(key: str, *, priority: int) -> VictimGangBuilder:
    return VictimGangBuilder(key, priority, is_reserved=True)


def solo(key: str, node: str, *, gpus: int, priority: int) -> VictimGangBuilder:
    """A pod of no gang: a gang of its own that names no minimums (it goes whole or not at all)."""
    built = VictimGangBuilder(key, priority)
    built._victims.append(Victim(key, node, {GPU: gpus}, key))
    return built


def victim_set(*builders: VictimGangBuilder) -> tuple[list[Victim], dict[str, VictimGang]]:
    victims = [v for b in builders for v in b.victims()]
    return victims, {b.gang().key: b.gang() for b in builders}


def busy_view(
    specs: Iterable[HostSpec], victims: Iterable[Victim], others: Mapping[str, int] | None = None
) -> ClusterView:
    """Free GPUs per node: allocatable less the victims on it, less ``others`` (GPUs of pods that are no victims)."""
    specs = list(specs)
    held: dict[str, int] = dict(others or {})
    for victim in victims:
        held[victim.node] = held.get(victim.node, 0) + victim.demand.get(GPU, 0)
    free = {h.name: {GPU: h.allocatable[GPU] - held.get(h.name, 0)} for h in specs}
    return ClusterView(Topology(specs), free)


def preemptor(request: GangRequest) -> GangRequest:
    """The request at the preemptor's priority, above every victim the tests build."""
    return GangRequest(request.namespace, "preemptor", request.groups, request.packs, PREEMPTOR_PRIORITY)
