"""The cluster topology as a networkx graph, and the queries the solver and the CLI need.

Shape: a root ``cluster`` node, then one graph node per domain at each active level (broad → narrow), then one per
host, then one per GPU under its host. Edges point from parent to child. A node missing a level's label sits in
that level's ``UNKNOWN`` domain, so partial labelling degrades placement quality, never correctness.

The queries below read flat per-node paths, not the graph: the graph (a vertex per GPU, hundreds of thousands at
10,000 nodes) is built only when something asks for ``graph``, which no placement path does today; it is there
for sub-node packing to grow into.

Domain ids are ``(level_name, value)`` tuples. Values are global per level, as label values are: two racks with
the same ``nvidia.com/gpu.clique`` value are one NVLink domain wherever they hang, which is what a ``required``
pack constraint on that key means.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx

from topology.levels import Level, active_levels

__all__ = ["GPU_RESOURCE", "ROOT", "UNKNOWN", "DomainId", "HostSpec", "Topology"]

GPU_RESOURCE = "nvidia.com/gpu"
ROOT = ("cluster", "")
UNKNOWN = "<unknown>"

DomainId = tuple[str, str]


def _gpu_id(node: str, index: int) -> DomainId:
    return ("gpu", f"{node}/{index}")


@dataclass(frozen=True)
class HostSpec:
    """What topology needs of a Kubernetes node: its name, labels and allocatable units."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, int] = field(default_factory=dict)


class Topology:
    """An immutable view of the cluster's hierarchy. Build once per cluster change; query freely."""

    def __init__(self, hosts: Iterable[HostSpec], levels: Sequence[Level] | None = None) -> None:
        self.hosts: dict[str, HostSpec] = {}
        for host in hosts:
            if host.name in self.hosts:
                raise ValueError(f"topology: node {host.name!r} appears twice")
            self.hosts[host.name] = host
        self.levels: tuple[Level, ...] = active_levels([h.labels for h in self.hosts.values()], levels)
        self._level_index = {level.name: i for i, level in enumerate(self.levels)}
        # node → domain value per level, computed once: every query below is a dict lookup.
        self._path: dict[str, tuple[str, ...]] = {
            name: tuple(self._value(host, level) for level in self.levels) for name, host in self.hosts.items()
        }
        self._members: dict[str, dict[str, list[str]]] = {level.name: {} for level in self.levels}
        for name, path in self._path.items():
            for level, value in zip(self.levels, path, strict=True):
                self._members[level.name].setdefault(value, []).append(name)

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The hierarchy as a networkx graph, GPUs included; built on first use (see the module docstring)."""
        return self._build_graph()

    def _value(self, host: HostSpec, level: Level) -> str:
        value = level.value_of(host.labels)
        if value is None and level is self.levels[-1]:
            return host.name  # the host level falls back to the node's own name
        return value if value is not None else UNKNOWN

    def _build_graph(self) -> nx.DiGraph:
        graph = nx.DiGraph()
        graph.add_node(ROOT, kind="cluster")
        for name, path in self._path.items():
            parent: DomainId = ROOT
            for level, value in zip(self.levels[:-1], path[:-1], strict=True):
                domain = (level.name, value)
                graph.add_node(domain, kind="domain", level=level.name)
                graph.add_edge(parent, domain)
                parent = domain
            host_id = (self.levels[-1].name, name)
            host = self.hosts[name]
            graph.add_node(host_id, kind="host", labels=dict(host.labels), allocatable=dict(host.allocatable))
            graph.add_edge(parent, host_id)
            for index in range(host.allocatable.get(GPU_RESOURCE, 0)):
                gpu = _gpu_id(name, index)
                graph.add_node(gpu, kind="gpu", index=index)
                graph.add_edge(host_id, gpu)
        return graph

    # --- lookups -----------------------------------------------------------------------------------------------

    def level(self, name: str) -> Level:
        return self.levels[self._level_index[name]]

    def has_level(self, name: str) -> bool:
        return name in self._level_index

    def domain_of(self, node: str, level: str) -> str:
        """The domain value ``node`` belongs to at ``level`` (``UNKNOWN`` when it carries no such label)."""
        return self._path[node][self._level_index[level]]

    def domains(self, level: str) -> dict[str, tuple[str, ...]]:
        """Every domain at ``level`` with its member nodes."""
        return {value: tuple(nodes) for value, nodes in self._members[level].items()}

    def gpus(self, node: str) -> list[DomainId]:
        """The GPU graph nodes of a host, in device-index order (numeric: GPU 10 comes after GPU 9)."""
        return [_gpu_id(node, index) for index in range(self.hosts[node].allocatable.get(GPU_RESOURCE, 0))]

    def free_per_domain(
        self, level: str, free: Mapping[str, Mapping[str, int]], resource: str = GPU_RESOURCE
    ) -> dict[str, int]:
        """Sum of ``free[node][resource]`` over each domain's nodes at ``level``. The ``UNKNOWN`` entry is a bucket of
        the nodes without the level's label, not a domain: its sum is no capacity any one gang could pack into."""
        return {
            value: sum(free.get(node, {}).get(resource, 0) for node in nodes)
            for value, nodes in self._members[level].items()
        }

    def _common_index(self, paths: Sequence[tuple[str, ...]]) -> int:
        """Index of the narrowest level at which all ``paths`` share one known domain; -1 if none.

        A level where some node's label is missing says nothing either way and is stepped over, so two nodes of one
        NVLink domain still share it when the zone level is active but unlabelled on them. The scan stops at the
        first level where known values differ: narrower values under different parents (a sub-domain "0" in two
        racks) are not one domain.
        """
        common = -1
        for index in range(len(self.levels)):
            values = {path[index] for path in paths}
            if UNKNOWN in values:
                continue
            if len(values) != 1:
                break
            common = index
        return common

    def lowest_common_level(self, nodes: Iterable[str]) -> Level | None:
        """The narrowest level at which all ``nodes`` share one known domain; ``None`` if even the broadest level
        splits them, no level is known for all of them, or nothing is given."""
        paths = [self._path[node] for node in nodes]
        if not paths:
            return None
        index = self._common_index(paths)
        return self.levels[index] if index >= 0 else None

    def domains_spanned(self, nodes: Iterable[str], level: str) -> int:
        """How many distinct domains at ``level`` the given nodes touch. Nodes with no label for ``level`` count
        one domain each: nothing says they share one, and undercounting would flatter a scattered placement."""
        index = self._level_index[level]
        values = [(self._path[node][index], node) for node in nodes]
        return len({value for value, _ in values if value != UNKNOWN}) + len({n for v, n in values if v == UNKNOWN})

    def distance(self, a: str, b: str) -> int:
        """Hops up the hierarchy to the nearest shared domain: 0 for the same host, len(levels) if none."""
        return len(self.levels) - 1 - self._common_index([self._path[a], self._path[b]])
