"""Capacity bookkeeping of a replay, independent of whatever decides placements: every bind is checked here, so
no policy (or adapter bug) can run a node past its allocatable without the replay failing loudly."""

from __future__ import annotations

from collections.abc import Mapping

GPU = "nvidia.com/gpu"

Vector = Mapping[str, int]


class OvercommitError(RuntimeError):
    """A bind that would exceed a node's allocatable, or that names an unknown node or an already bound pod."""


class Ledger:
    def __init__(self, allocatable: Mapping[str, Vector]) -> None:
        self.allocatable: dict[str, dict[str, int]] = {node: dict(vector) for node, vector in allocatable.items()}
        self._free: dict[str, dict[str, int]] = {node: dict(vector) for node, vector in allocatable.items()}
        self._bound: dict[str, tuple[str, dict[str, int]]] = {}  # pod → (node, demand)
        self.capacity_gpus = sum(vector.get(GPU, 0) for vector in self.allocatable.values())
        self.used_gpus = 0

    def bind(self, *, pod: str, node: str, demand: Vector) -> None:
        if pod in self._bound:
            raise OvercommitError(f"pod {pod} is already bound to {self._bound[pod][0]}")
        free = self._free.get(node)
        if free is None:
            raise OvercommitError(f"pod {pod}: node {node!r} is not in the cluster")
        short = {name: amount for name, amount in demand.items() if amount > free.get(name, 0)}
        if short:
            detail = ", ".join(f"{name} needs {amount}, {free.get(name, 0)} free" for name, amount in short.items())
            raise OvercommitError(f"pod {pod} on {node}: {detail}")
        for name, amount in demand.items():
            free[name] -= amount
        self._bound[pod] = (node, dict(demand))
        self.used_gpus += demand.get(GPU, 0)

    def release(self, pod: str) -> None:
        node, demand = self._bound.pop(pod)
        free = self._free[node]
        for name, amount in demand.items():
            free[name] += amount
        self.used_gpus -= demand.get(GPU, 0)

    def node_of(self, pod: str) -> str | None:
        bound = self._bound.get(pod)
        return bound[0] if bound else None

    def free(self) -> dict[str, dict[str, int]]:
        """A copy of the free units per node: the frozen view a decision is made on."""
        return {node: dict(vector) for node, vector in self._free.items()}

    def free_gpus(self, node: str) -> int:
        return self._free[node].get(GPU, 0)

    def check(self) -> None:
        """Recount from the bound pods and compare: used + free = allocatable, nothing negative, on every node."""
        used: dict[str, dict[str, int]] = {node: {} for node in self.allocatable}
        for node, demand in self._bound.values():
            for name, amount in demand.items():
                used[node][name] = used[node].get(name, 0) + amount
        for node, vector in self.allocatable.items():
            for name in set(vector) | set(used[node]):
                total, taken = vector.get(name, 0), used[node].get(name, 0)
                if taken > total or self._free[node].get(name, 0) != total - taken:
                    raise OvercommitError(f"node {node}: {name} allocatable {total}, bound {taken}")
