"""From Kubernetes objects to what the solver reads: a ``Topology`` and free capacity per node.

Topology levels come from, in order: an explicit levels file (a YAML/JSON list of ``{domain, key}``), a Grove
``ClusterTopologyBinding`` in the snapshot, else the defaults of ``topology.levels`` (which recognise GFD,
Topograph and the standard zone/region labels). Free capacity is allocatable minus the requests of bound,
non-terminal pods, minus other gangs' reservations when given.

DRA (``resource.k8s.io`` ResourceClaims, Grove's ``resourceSharing`` and MNNVL's ``mnnvl-claim``) is assumed to
manage devices the device plugin does not: GPUs are counted from allocatable ``nvidia.com/gpu`` only, and a claim
is no extended-resource request, so a claimed device is never counted free (nor used) on any node. Whether a pod's
claims fit a node is kube-scheduler's DynamicResources plugin's to decide; it runs before the extender's filter, and
a planned node it refuses is excluded and the group re-planned around it. Not supported: a node whose GPUs both the
device plugin and a DRA driver hand out, and extended-resource requests a DRA driver serves
(``DeviceClass.spec.extendedResourceName``), which allocatable does not list — the extender would see no GPUs there.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from api.core import Node, Pod, ResourceVector
from api.grove import ClusterTopologyBinding
from placement.request import ClusterView
from scheduler.snapshot import Snapshot, gc_paused
from scheduler.snapshot.documents import UnreadableText, parse_text
from scheduler.snapshot.files import UnreadableFile, read_bounded
from topology import HostSpec, Level, Topology, levels_from_pairs

__all__ = [
    "MAX_LEVELS_FILE_BYTES",
    "LevelsError",
    "build_topology",
    "choose_levels",
    "cluster_view",
    "free_capacity",
    "holds_capacity",
    "levels_from_binding",
    "load_levels_file",
    "snapshot_view",
]

log = logging.getLogger(__name__)

MAX_LEVELS_FILE_BYTES = 1 << 20
"""A levels file is a few lines (a ClusterTopologyBinding a few hundred bytes): 1 MiB is plenty."""


class LevelsError(ValueError):
    """A levels file or binding that cannot describe a topology; the message names the source and entry."""


def load_levels_file(path: str | Path) -> tuple[Level, ...]:
    """Levels from a YAML or JSON file holding a list of ``{domain, key}``, broad → narrow.

    A ClusterTopologyBinding's ``spec.levels`` pasted as-is is the same shape, so a file can also be a whole
    ClusterTopologyBinding object.
    """
    source = str(path)
    try:
        document: Any = parse_text(read_bounded(path, limit=MAX_LEVELS_FILE_BYTES))
    except (UnreadableFile, UnreadableText) as err:
        raise LevelsError(f"levels file {source}: {err}") from None
    if isinstance(document, Mapping) and "kind" in document:
        if document["kind"] != "ClusterTopologyBinding":
            raise LevelsError(
                f"levels file {source}: kind {document['kind']!r}: expected a ClusterTopologyBinding or a list of "
                "{domain, key}"
            )
        spec = document.get("spec")
        document = spec.get("levels") if isinstance(spec, Mapping) else None
    if not isinstance(document, list) or not document:
        raise LevelsError(f"levels file {source}: expected a non-empty list of {{domain, key}}")
    pairs = []
    for index, entry in enumerate(document):
        if not isinstance(entry, Mapping):
            raise LevelsError(f"levels file {source}: entry [{index}] is not a {{domain, key}} object")
        domain, key = entry.get("domain"), entry.get("key")
        if not isinstance(domain, str) or not domain:
            raise LevelsError(f"levels file {source}: entry [{index}].domain must be a non-empty string")
        if not isinstance(key, str) or not key:
            raise LevelsError(f"levels file {source}: entry [{index}].key must be a non-empty string")
        pairs.append((domain, key))
    try:
        return levels_from_pairs(pairs)
    except ValueError as err:
        raise LevelsError(f"levels file {source}: {err}") from None


def levels_from_binding(binding: ClusterTopologyBinding) -> tuple[Level, ...]:
    try:
        return levels_from_pairs((level.domain, level.key) for level in binding.spec.levels)
    except ValueError as err:
        raise LevelsError(f"ClusterTopologyBinding {binding.metadata.name}: {err}") from None


def choose_levels(
    *, levels_file: str | Path | None = None, bindings: Sequence[ClusterTopologyBinding] = ()
) -> tuple[Level, ...] | None:
    """The levels to build the topology with; ``None`` means "the defaults" (``Topology`` discovers tiers).

    With several bindings (a heterogeneous cluster), the first by name is used and the choice is logged.
    """
    if levels_file is not None:
        return load_levels_file(levels_file)
    if not bindings:
        return None
    chosen = min(bindings, key=lambda b: b.metadata.name)
    if len(bindings) > 1:
        log.info(
            "several ClusterTopologyBindings; using one binding=%s ignored=%s",
            chosen.metadata.name,
            ",".join(sorted(b.metadata.name for b in bindings if b is not chosen)),
        )
    return levels_from_binding(chosen)


def build_topology(nodes: Iterable[Node], *, levels: Sequence[Level] | None = None) -> Topology:
    with gc_paused():  # tens of thousands of graph nodes, all long-lived
        hosts = [HostSpec(node.name, node.metadata.labels, node.allocatable()) for node in nodes]
        return Topology(hosts, levels)


def holds_capacity(pod: Pod) -> bool:
    """A pod the node has accounted for: bound and not finished (a terminating pod still holds its share)."""
    return bool(pod.spec.nodeName) and not pod.terminal


def free_capacity(
    nodes: Iterable[Node],
    pods: Iterable[Pod],
    *,
    reservations: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, ResourceVector]:
    """Node → free units per resource: allocatable − bound non-terminal pods − ``reservations`` (node → units).

    Floored at zero: an over-committed node (possible in a hand-edited snapshot) has nothing free, not a debt
    the solver would have to reason about. Resources a node does not list are absent, i.e. zero.
    """
    free: dict[str, ResourceVector] = {node.name: dict(node.allocatable()) for node in nodes}
    for pod in pods:
        if holds_capacity(pod) and pod.spec.nodeName in free:
            _subtract(free[pod.spec.nodeName], pod.requests())
    for node, reserved in (reservations or {}).items():
        if node in free:
            _subtract(free[node], reserved)
    return free


def _subtract(vector: ResourceVector, used: Mapping[str, int]) -> None:
    for name, amount in used.items():
        if name in vector:
            vector[name] = max(0, vector[name] - amount)


def cluster_view(
    nodes: Sequence[Node],
    pods: Iterable[Pod],
    *,
    levels: Sequence[Level] | None = None,
    reservations: Mapping[str, Mapping[str, int]] | None = None,
) -> ClusterView:
    """The solver's frozen view: topology over ``nodes`` and their free capacity."""
    return ClusterView(
        topology=build_topology(nodes, levels=levels),
        free=free_capacity(nodes, pods, reservations=reservations),
    )


def snapshot_view(
    snapshot: Snapshot,
    *,
    levels_file: str | Path | None = None,
    reservations: Mapping[str, Mapping[str, int]] | None = None,
) -> ClusterView:
    """``cluster_view`` over a snapshot, with levels from ``levels_file``, else its binding, else the defaults."""
    levels = choose_levels(levels_file=levels_file, bindings=snapshot.topology_bindings)
    return cluster_view(snapshot.nodes, snapshot.pods, levels=levels, reservations=reservations)
