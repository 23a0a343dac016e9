"""Future fit: the free GPUs a gang shape the cluster keeps seeing could not use, FGD-style, per topology domain.

FGD (Weng et al., "Beware of Fragmentation", USENIX ATC '23) measures a node's fragmentation for a typical task
as its free GPUs if the task cannot run there (else only the GPUs too small for it), and the cluster's as the sum
over nodes, weighted by how popular each task is; it places each task where that sum grows least. Here the task
is a :class:`~placement.request.WorkloadShape` (a gang's GPUs in pods of one size, wanted in one domain of a
level) and the unit is a domain of that level: domain d *hosts* shape s when its nodes' free GPUs, counted in
whole pods of s's size (Σ over nodes of ⌊free / pod GPUs⌋), reach the pods s needs — or, for a shape larger than d
could ever hold, all the pods d holds when empty (then d hosts s's share of a wider placement only while it is
whole). A domain that does not host s has all its free GPUs fragmented for s:

    fragmented = Σ_s weight_s × Σ_d (free GPUs of d if d does not host s, else 0)

Filling a domain that already cannot host s lowers it (best fit); breaking the last room for s in a domain raises
it by everything left there. The single-gang tier (:mod:`placement.tiers.future_fit`, which holds the CP-SAT
expression) and the batch model share one instance per problem.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from placement.arrays import HostArrays, Ints
from placement.request import WorkloadShape
from topology.graph import GPU_RESOURCE, UNKNOWN

__all__ = ["FutureFit", "ShapeTable", "usage_of"]


@dataclass(frozen=True)
class ShapeTable:
    """One shape over the domains of its level: each host's domain id (-1: not labelled at that level), and per
    domain its free GPUs, the pods of the shape's size it holds now, the pods it must hold to host the shape,
    whether it hosts it now, and its fragmented GPUs for the shape now."""

    shape: WorkloadShape
    domain: Ints
    free: Ints
    pods: Ints
    needed: Ints
    hosting: npt.NDArray[np.bool_]

    @property
    def fragmented(self) -> Ints:
        return np.where(self.hosting, 0, self.free)


class FutureFit:
    """The measure over ``hosts.view`` and its shapes (``hosts``: the view's host arrays, whose level tables it
    shares)."""

    def __init__(self, hosts: HostArrays) -> None:
        view = hosts.view
        topology = view.topology
        self.names = hosts.names
        self.position = hosts.position
        self.free: Ints = np.maximum(hosts.free_of(GPU_RESOURCE), 0)
        allocatable = hosts.allocatable(GPU_RESOURCE)
        # Shapes that ask every domain for the same pods of the same size are one table with their weights summed
        # (on a cluster of 8-GPU nodes, every gang of 8-GPU pods asks one node for one pod).
        merged: dict[tuple[str, int, bytes], ShapeTable] = {}
        domains: dict[str, Ints] = {}
        for shape in view.shapes:
            if not topology.has_level(shape.level) or shape.pod_gpus <= 0 or shape.weight <= 0:
                continue
            if shape.level not in domains:
                ids, names = hosts.level(shape.level)
                unlabelled = np.fromiter((n.startswith(f"{UNKNOWN}:") for n in names), np.bool_, len(names))
                domains[shape.level] = np.where(unlabelled[ids], -1, ids)
            domain = domains[shape.level]
            needed = np.minimum(shape.pods, _per_domain(domain, allocatable // shape.pod_gpus))
            key = (shape.level, shape.pod_gpus, needed.tobytes())
            if key in merged:
                table = merged[key]
                weight = table.shape.weight + shape.weight
                merged[key] = replace(table, shape=replace(table.shape, weight=weight))
                continue
            pods = _per_domain(domain, self.free // shape.pod_gpus)
            hosting = (needed > 0) & (pods >= needed)
            merged[key] = ShapeTable(shape, domain, _per_domain(domain, self.free), pods, needed, hosting)
        self.tables: list[ShapeTable] = list(merged.values())
        self.total = sum(t.shape.weight * int(t.fragmented.sum()) for t in self.tables)  # before any plan
        self.upper = sum(t.shape.weight * int(t.free.sum()) for t in self.tables)  # every free GPU fragmented
        # Every table's domains numbered in one range, so a plan is judged with a few numpy calls for all shapes.
        sizes = [len(t.free) for t in self.tables]
        offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64) if sizes else np.zeros(0, np.int64)
        numbered = zip(self.tables, offsets.tolist(), strict=True)
        self._domain = np.array([np.where(t.domain >= 0, t.domain + o, -1) for t, o in numbered])
        self._pod = np.array([t.shape.pod_gpus for t in self.tables], np.int64).reshape(-1, 1)
        self._pods = np.concatenate([t.pods for t in self.tables]) if sizes else np.zeros(0, np.int64)
        self._free = np.concatenate([t.free for t in self.tables]) if sizes else np.zeros(0, np.int64)
        self._needed = np.concatenate([t.needed for t in self.tables]) if sizes else np.zeros(0, np.int64)
        self._weight = np.repeat([t.shape.weight for t in self.tables], sizes).astype(np.int64)
        self._before = np.concatenate([t.fragmented for t in self.tables]) if sizes else np.zeros(0, np.int64)

    def fragmented(self, usage: Mapping[str, int]) -> int:
        """The weighted fragmented GPUs after a plan using ``usage`` GPUs per node."""
        if not usage:
            return self.total
        if not self.tables:
            return 0
        nodes = np.fromiter((self.position[n] for n in usage), np.int64, len(usage))
        used = np.fromiter(usage.values(), np.int64, len(usage))
        domain = self._domain[:, nodes]  # (tables, nodes): the node's domain in every table, -1 for none
        inside = domain >= 0
        free = self.free[nodes]
        drop = np.broadcast_to(free // self._pod - (free - used) // self._pod, domain.shape)
        touched = np.unique(domain[inside])
        slots = len(self._pods)
        lost = np.bincount(domain[inside], weights=drop[inside], minlength=slots)[touched].astype(np.int64)
        taken = np.bincount(domain[inside], weights=np.broadcast_to(used, domain.shape)[inside], minlength=slots)
        pods = self._pods[touched] - lost
        left = self._free[touched] - taken[touched].astype(np.int64)
        after = np.where(pods >= self._needed[touched], 0, left)
        return self.total + int((self._weight[touched] * (after - self._before[touched])).sum())

    def lower_bound(self, nodes: Ints, groups: Ints, count: int, gpus: int) -> Ints:
        """Per group of candidate hosts (``nodes``: host positions, ``groups``: their group), a lower bound on the
        measure after any plan placing ``gpus`` GPUs on that group alone. A group inside one domain of a shape's
        level leaves that domain exactly ``gpus`` fewer free GPUs and at most that many fewer in whole pods;
        otherwise the plan can lower the shape's fragmentation only in the group's domains that already cannot host
        the shape, by at most ``gpus`` and at most what those hold free."""
        bound = np.full(count, self.total, np.int64)
        keep = groups >= 0
        members = groups[keep]
        for table in self.tables:
            g, weight = table.shape.pod_gpus, table.shape.weight
            domain = table.domain[nodes][keep]
            low = np.full(count, np.iinfo(np.int64).max)
            high = np.full(count, -2)
            np.minimum.at(low, members, domain)
            np.maximum.at(high, members, domain)
            single = (low == high) & (low >= 0)
            d = np.where(single, low, 0)
            if not len(table.free):
                continue
            left = np.maximum(table.free[d] - gpus, 0)
            lost = np.minimum(table.pods[d], left // g) < table.needed[d]  # cannot host the shape after, surely
            # Inside one domain: a hosting domain that surely stops hosting has all it keeps fragmented (else
            # possibly none); a domain that already could not host keeps fragmented exactly what it keeps.
            change = np.where(table.hosting[d], np.where(lost, left, 0), left - table.free[d])
            # Across domains: only the fragmented GPUs of the domains the group touches can become used.
            size = len(table.free)
            labelled = domain >= 0
            touched = np.unique(members[labelled] * size + domain[labelled])
            fragmented = table.fragmented[touched % size]
            reducible = np.bincount(touched // size, weights=fragmented, minlength=count).astype(np.int64)
            bound += weight * np.where(single, change, -np.minimum(gpus, reducible))
        return np.maximum(bound, 0)


def _per_domain(domain: Ints, values: Ints) -> Ints:
    """Sum of ``values`` (per host) per domain id, hosts without one (-1) left out."""
    labelled = domain >= 0
    size = int(domain.max()) + 1 if labelled.any() else 0
    return np.bincount(domain[labelled], weights=values[labelled], minlength=size).astype(np.int64)


def usage_of(counts: Mapping[tuple[int, str], int], gpus: Sequence[int]) -> dict[str, int]:
    """GPUs a plan uses per node, from pods per (group, node) and GPUs per pod of each group."""
    usage: dict[str, int] = {}
    for (g, node), c in counts.items():
        if c > 0 and gpus[g]:
            usage[node] = usage.get(node, 0) + c * gpus[g]
    return usage
