"""Placement quality judged after the fact, from labels and free capacity alone (no solver imports).

- ``honours_required``: every ``required`` pack constraint of the gang holds — the pods in its scope share one
  value of its node-label key. A gang placed against one is not the workload its owner asked for (a tensor-parallel
  group split across NVLink cliques cannot use multi-node NVLink), so its GPU time is not counted as delivered.
- ``fits_one_domain``: the gang's guaranteed GPU pods could have been packed into the free GPUs of a single
  domain at ``level`` (first-fit decreasing over that domain's eligible nodes) — asked when it was placed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from api.core import GPU
from placement.request import GangRequest
from topology import Topology
from topology.levels import NVLINK_LEVEL


def honours_required(request: GangRequest, bound: Mapping[str, str], topology: Topology) -> bool:
    groups = {group.name: group for group in request.groups}
    for pack in request.packs:
        if not pack.required:
            continue
        nodes = {bound[pod] for name in pack.groups for pod in groups[name].pods if pod in bound}
        values = {topology.hosts[node].labels.get(pack.required) for node in nodes}
        if len(values) > 1 or None in values:
            return False
    return True


def fits_one_domain(
    request: GangRequest, free: Mapping[str, Mapping[str, int]], topology: Topology, level: str
) -> bool:
    pods = sorted(
        ((group.demand.get(GPU, 0), group.eligible) for group in request.groups for _ in range(group.min_replicas)),
        key=lambda pod: -pod[0],
    )
    pods = [pod for pod in pods if pod[0] > 0]
    if not pods:
        return False
    for nodes in topology.domains(level).values():
        room = {node: free.get(node, {}).get(GPU, 0) for node in nodes}
        if sum(room.values()) < sum(gpus for gpus, _ in pods):
            continue
        for gpus, eligible in pods:
            node = next((n for n in nodes if room[n] >= gpus and (eligible is None or n in eligible)), None)
            if node is None:
                break
            room[node] -= gpus
        else:
            return True
    return False


def nvlink_level(topology: Topology) -> str:
    """The NVLink-domain level: the clique/accelerator level when nodes carry one, else the node itself."""
    return NVLINK_LEVEL if topology.has_level(NVLINK_LEVEL) else topology.levels[-1].name


def make_domain_probe(topology: Topology) -> Callable[[GangRequest, Mapping[str, Mapping[str, int]]], bool]:
    """The engine probe behind ``oneNvlinkDomainShare``: could this gang fit one NVLink domain right now?"""
    level = nvlink_level(topology)
    return lambda request, free: fits_one_domain(request, free, topology, level)
