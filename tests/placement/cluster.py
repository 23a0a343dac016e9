"""Builders for small GPU clusters and gangs used by the placement tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from placement import ClusterView, GangRequest, GroupRequest, PackScope
from topology import HostSpec, Topology

ZONE = "topology.kubernetes.io/zone"
CLIQUE = "nvidia.com/gpu.clique"
HOSTNAME = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"


def hosts(*, zones: int = 1, cliques: int = 2, per_clique: int = 2, gpus: int = 8, cpu: int = 64_000) -> list[HostSpec]:
    """Nodes named ``z{zone}c{clique}h{host}``, clique values global (``c{zone}{clique}``)."""
    found = []
    for z in range(zones):
        for c in range(cliques):
            for h in range(per_clique):
                name = f"z{z}c{c}h{h}"
                labels = {ZONE: f"z{z}", CLIQUE: f"c{z}{c}", HOSTNAME: name}
                found.append(HostSpec(name, labels, {GPU: gpus, "cpu": cpu}))
    return found


def view(specs: Iterable[HostSpec], used: Mapping[str, Mapping[str, int]] | None = None) -> ClusterView:
    """A view whose free capacity is allocatable minus ``used``."""
    specs = list(specs)
    free = {h.name: {r: u - (used or {}).get(h.name, {}).get(r, 0) for r, u in h.allocatable.items()} for h in specs}
    return ClusterView(Topology(specs), free)


def group(
    name: str,
    pods: int,
    *,
    gpus: int = 1,
    cpu: int = 0,
    min_replicas: int | None = None,
    eligible: Iterable[str] | None = None,
) -> GroupRequest:
    demand = {GPU: gpus} if cpu == 0 else {GPU: gpus, "cpu": cpu}
    return GroupRequest(
        name,
        tuple(f"ns/{name}-{i}" for i in range(pods)),
        demand,
        pods if min_replicas is None else min_replicas,
        None if eligible is None else frozenset(eligible),
    )


def gang(*groups: GroupRequest, packs: Iterable[PackScope] = ()) -> GangRequest:
    return GangRequest("ns", "gang", tuple(groups), tuple(packs))


def pack(*groups: str, required: str | None = None, preferred: str | None = None) -> PackScope:
    return PackScope(tuple(groups), required, preferred)
