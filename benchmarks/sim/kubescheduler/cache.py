"""kube-scheduler's cache, as its resource filter and scorer read it (``pkg/scheduler/backend/cache``): each node's
allocatable and what its bound and assumed pods use.

A pod is *assumed* on the node a scheduling cycle chose, before its binding is done, so the next cycles count it;
a failed binding forgets it; the informer confirms it once the API shows it bound (wherever that is). So that a
cycle need not test every node, the cache keeps, for each demand it was asked about, the nodes that fit it now
(kube-scheduler tests nodes in parallel goroutines; a Python loop over 10,000 would be the simulation's cost).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from api.core import GPU

__all__ = ["Cache", "Demand"]

Demand = tuple[tuple[str, int], ...]
"""A pod's summed requests, sorted by resource: hashable, so pods of one shape share a set of fitting nodes."""

_SCORED = ("cpu", "memory", GPU)  # what the default profile's LeastAllocated weighs here


@dataclass
class _Held:
    node: str
    demand: Demand
    assumed: bool


class Cache:
    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        self._columns: dict[str, int] = {}  # resource → column of the arrays
        self._allocatable = np.zeros((0, 0), dtype=np.int64)  # [node, resource]
        self._used = np.zeros((0, 0), dtype=np.int64)
        self._held: dict[str, _Held] = {}  # pod key → where it counts
        self._fit: dict[Demand, dict[str, None]] = {}  # demand → the nodes it fits, in a stable order
        self._vectors: dict[Demand, np.ndarray | None] = {}  # None: a resource no node has
        # The fitted demands that some node could hold, as rows of one matrix: a node that changed is tested
        # against all of them in one comparison.
        self._classes: list[dict[str, None]] = []
        self._matrix = np.zeros((0, 0), dtype=np.int64)
        self._scored = np.zeros(0, dtype=np.int64)  # the columns LeastAllocated weighs

    def __contains__(self, key: str) -> bool:
        return key in self._held

    def assumed(self, key: str) -> bool:
        held = self._held.get(key)
        return held is not None and held.assumed

    # --- nodes ---------------------------------------------------------------------------------------------------

    def set_node(self, name: str, allocatable: dict[str, int]) -> None:
        """A node added or changed (its allocatable; what its pods use is the cache's own count)."""
        if any(resource not in self._columns for resource in allocatable):
            self._add_columns([r for r in allocatable if r not in self._columns])
        row = self._index.get(name)
        if row is None:
            row = self._index[name] = len(self.names)
            self.names.append(name)
            width = len(self._columns)
            self._allocatable = np.vstack([self._allocatable, np.zeros((1, width), dtype=np.int64)])
            self._used = np.vstack([self._used, np.zeros((1, width), dtype=np.int64)])
            self._count(row, [held for held in self._held.values() if held.node == name])
        self._allocatable[row] = 0
        for resource, amount in allocatable.items():
            self._allocatable[row, self._columns[resource]] = amount
        self._refit(name)

    def _add_columns(self, resources: list[str]) -> None:
        for resource in resources:
            self._columns[resource] = len(self._columns)
        self._scored = np.array([self._columns[r] for r in _SCORED if r in self._columns], dtype=np.int64)
        extra = np.zeros((len(self.names), len(resources)), dtype=np.int64)
        self._allocatable = np.hstack([self._allocatable, extra])
        self._used = np.zeros_like(self._allocatable)  # recounted: pods may hold the new resources already
        for name, row in self._index.items():
            self._count(row, [held for held in self._held.values() if held.node == name])
        self._fit.clear()  # a demand no node could hold may fit now
        self._vectors.clear()
        self._classes = []
        self._matrix = np.zeros((0, len(self._columns)), dtype=np.int64)

    # --- pods ----------------------------------------------------------------------------------------------------

    def assume(self, key: str, *, node: str, demand: Demand) -> None:
        """The scheduling cycle chose ``node``: the pod counts there from now, its binding still to come."""
        self._hold(key, node=node, demand=demand, assumed=True)

    def forget(self, key: str) -> bool:
        """The binding failed: an assumed pod counts nowhere again. True if it was assumed."""
        held = self._held.get(key)
        if held is None or not held.assumed:
            return False
        self.remove(key)
        return True

    def confirm(self, key: str, *, node: str, demand: Demand) -> None:
        """The informer shows the pod bound to ``node`` (assumed there, elsewhere, or never seen)."""
        held = self._held.get(key)
        if held is not None and held.node != node:
            self.remove(key)
            held = None
        if held is None:
            self._hold(key, node=node, demand=demand, assumed=False)
        else:
            held.assumed = False

    def remove(self, key: str) -> bool:
        """The pod is gone (or finished): its node has the room back. True if it counted anywhere."""
        held = self._held.pop(key, None)
        if held is None:
            return False
        self._take(held, -1)
        return True

    def _hold(self, key: str, *, node: str, demand: Demand, assumed: bool) -> None:
        held = _Held(node, demand, assumed)
        self._held[key] = held
        self._take(held, 1)

    def _take(self, held: _Held, sign: int) -> None:
        row = self._index.get(held.node)
        if row is None:
            return  # bound to a node the cache does not know yet: counted when it comes
        self._count(row, [held], sign=sign)
        self._refit(held.node)

    def _count(self, row: int, pods: list[_Held], *, sign: int = 1) -> None:
        for held in pods:
            for resource, amount in held.demand:
                column = self._columns.get(resource)
                if column is not None:
                    self._used[row, column] += sign * amount

    # --- what a cycle reads --------------------------------------------------------------------------------------

    def feasible(self, demand: Demand) -> list[str]:
        """The nodes with room for ``demand`` now (NodeResourcesFit), in a stable order."""
        nodes = self._fit.get(demand)
        if nodes is None:
            vector = self._vector(demand)
            fits = [] if vector is None else np.flatnonzero(np.all(self._used + vector <= self._allocatable, axis=1))
            nodes = self._fit[demand] = {self.names[row]: None for row in fits}
            if vector is not None:
                self._classes.append(nodes)
                self._matrix = np.vstack([self._matrix, vector])
        return list(nodes)

    def knows(self, node: str) -> bool:
        return node in self._index

    def least_allocated(self, demand: Demand) -> str:
        """The default profile's choice among the nodes with room for ``demand``: the most room left in cpu, memory
        and GPUs, as fractions of each node's allocatable, once the pod is placed (the first such node on a tie).
        Asked only when some node has room."""
        vector = self._vector(demand)
        assert vector is not None
        scored = self._scored
        allocatable = np.maximum(self._allocatable[:, scored], 1)
        free = (allocatable - self._used[:, scored] - vector[scored]) / allocatable
        score = np.where(np.all(self._used + vector <= self._allocatable, axis=1), free.sum(axis=1), -np.inf)
        return self.names[int(np.argmax(score))]

    def _vector(self, demand: Demand) -> np.ndarray | None:
        if demand not in self._vectors:
            vector = np.zeros(len(self._columns), dtype=np.int64)
            for resource, amount in demand:
                if resource not in self._columns:
                    self._vectors[demand] = None
                    return None
                vector[self._columns[resource]] = amount
            self._vectors[demand] = vector
        return self._vectors[demand]

    def _refit(self, node: str) -> None:
        """After ``node`` changed: it enters or leaves each demand's set (leaving and coming back puts it last)."""
        if not self._classes:
            return
        row = self._index[node]
        fits = np.all(self._allocatable[row] - self._used[row] >= self._matrix, axis=1).tolist()
        for nodes, fit in zip(self._classes, fits, strict=True):
            if fit:
                nodes[node] = None
            else:
                nodes.pop(node, None)
