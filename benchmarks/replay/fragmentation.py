"""Fragmentation: free GPUs that no waiting gang can use right now.

A node's free GPUs are usable by a waiting gang when one of the gang's still-pending GPU pods fits the node's free
units (every resource) on a node its group may use, and — for each ``required`` pack constraint of the gang — the
node's domain at that key still has as many free GPUs as the constrained groups need. Free GPUs usable by no
waiting gang are fragmented: they idle although work waits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from api.core import GPU
from benchmarks.replay.engine import Fragmentation
from placement.request import GangRequest
from topology import Topology
from topology.graph import UNKNOWN


def level_for_key(topology: Topology, key: str) -> str | None:
    """The topology level a node-label key names (``None`` if the cluster has no such level)."""
    return next((level.name for level in topology.levels if key in level.keys), None)


def make_fragmentation(topology: Topology) -> Fragmentation:
    def fragmented(pending: Sequence[GangRequest], free: Mapping[str, Mapping[str, int]]) -> int:
        unused = {node for node, vector in free.items() if vector.get(GPU, 0) > 0}
        domain_free: dict[str, dict[str, int]] = {}
        seen: set[tuple[object, ...]] = set()
        for request in pending:
            # Each required constraint: (level, GPUs its groups still need).
            needs = []
            for pack in request.packs:
                level = level_for_key(topology, pack.required) if pack.required else None
                if level is None:
                    continue
                scoped = [group for group in request.groups if group.name in pack.groups]
                needs.append((level, sum(g.min_replicas * g.demand.get(GPU, 0) for g in scoped)))
            for group in request.groups:
                if not group.pods or group.demand.get(GPU, 0) == 0 or not unused:
                    continue
                signature = (tuple(sorted(group.demand.items())), id(group.eligible), tuple(needs))
                if signature in seen:
                    continue
                seen.add(signature)
                for node in list(unused):
                    if group.eligible is not None and node not in group.eligible:
                        continue
                    if any(amount > free[node].get(name, 0) for name, amount in group.demand.items()):
                        continue
                    if all(_domain_free(topology, domain_free, level, node, free) >= need for level, need in needs):
                        unused.discard(node)
        return sum(free[node].get(GPU, 0) for node in unused)

    return fragmented


def _domain_free(
    topology: Topology,
    cache: dict[str, dict[str, int]],
    level: str,
    node: str,
    free: Mapping[str, Mapping[str, int]],
) -> int:
    domain = topology.domain_of(node, level)
    if domain == UNKNOWN:
        # A node without the required key's label cannot host the constrained pods (placement's rule), and the
        # UNKNOWN entry of free_per_domain is a bucket of such nodes, not a domain whose GPUs could be pooled.
        return 0
    if level not in cache:
        cache[level] = topology.free_per_domain(level, free)
    return cache[level][domain]
