"""Capacity bookkeeping of a replay, independent of whatever decides placements: every bind is checked here, so
no policy (or adapter bug) can run a node past its allocatable without the replay failing loudly."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from api.core import GPU
from placement.amounts import amount, quantity

Vector = Mapping[str, int]


class OvercommitError(RuntimeError):
    """A bind that would exceed a node's allocatable, or that names an unknown node or an already bound pod."""


class Ledger:
    def __init__(self, allocatable: Mapping[str, Vector]) -> None:
        self.allocatable: dict[str, dict[str, int]] = {node: dict(vector) for node, vector in allocatable.items()}
        self._free: dict[str, dict[str, int]] = {node: dict(vector) for node, vector in allocatable.items()}
        self._bound: dict[str, tuple[str, dict[str, int]]] = {}  # pod → (node, demand)
        self._on_node: dict[str, set[str]] = {node: set() for node in allocatable}
        self._touched: set[str] = set(allocatable)  # nodes changed since the last check
        self.capacity_gpus = sum(vector.get(GPU, 0) for vector in self.allocatable.values())
        self.used_gpus = 0

    def bind(self, *, pod: str, node: str, demand: Vector) -> None:
        if pod in self._bound:
            raise OvercommitError(f"pod {pod} is already bound to {self._bound[pod][0]}")
        free = self._free.get(node)
        if free is None:
            raise OvercommitError(f"pod {pod}: node {node!r} is not in the cluster")
        short = {name: units for name, units in demand.items() if units > free.get(name, 0)}
        if short:
            detail = ", ".join(
                f"needs {amount(name, units)}, {quantity(name, free.get(name, 0))} free"
                for name, units in short.items()
            )
            raise OvercommitError(f"pod {pod} on {node}: {detail}")
        for name, units in demand.items():
            free[name] -= units
        self._bound[pod] = (node, dict(demand))
        self._on_node[node].add(pod)
        self._touched.add(node)
        self.used_gpus += demand.get(GPU, 0)

    def release(self, pod: str) -> None:
        node, demand = self._bound.pop(pod)
        self._on_node[node].discard(pod)
        self._touched.add(node)
        free = self._free[node]
        for name, units in demand.items():
            free[name] += units
        self.used_gpus -= demand.get(GPU, 0)

    def node_of(self, pod: str) -> str | None:
        bound = self._bound.get(pod)
        return bound[0] if bound else None

    def free(self) -> Mapping[str, Mapping[str, int]]:
        """Free units per node: a read-only view of the live ledger, to be read before the next bind or release
        (a decision reads it, then the engine applies the binds). Copy it to keep it."""
        return MappingProxyType(self._free)

    def free_gpus(self, node: str) -> int:
        return self._free[node].get(GPU, 0)

    def check(self) -> None:
        """Recount every node changed since the last check from its bound pods: used + free = allocatable and
        nothing over allocatable. Cheap enough to run at every event."""
        for node in self._touched:
            used: dict[str, int] = {}
            for pod in self._on_node[node]:
                for name, units in self._bound[pod][1].items():
                    used[name] = used.get(name, 0) + units
            vector = self.allocatable[node]
            for name in set(vector) | set(used):
                total, taken = vector.get(name, 0), used.get(name, 0)
                if taken > total or self._free[node].get(name, 0) != total - taken:
                    raise OvercommitError(f"node {node}: {name} allocatable {total}, bound {taken}")
        self._touched.clear()
