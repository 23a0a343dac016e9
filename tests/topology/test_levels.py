"""Topology levels from each label family real GPU clusters carry, and nodes missing labels."""

from __future__ import annotations

import pytest

from api.core import Node
from scheduler.extender.translation.cluster_view import build_topology, free_capacity, levels_from_binding
from tests.builders import make_node, make_pod, make_topology_binding
from topology.graph import UNKNOWN

NV = "network.topology.nvidia.com"


def _pair(labels_a: dict[str, str], labels_b: dict[str, str]) -> list[Node]:
    return [make_node("a").gpus(4).labels(labels_a).obj(), make_node("b").gpus(4).labels(labels_b).obj()]


@pytest.mark.parametrize(
    ("labels_a", "labels_b", "levels"),
    [
        pytest.param(
            {"nvidia.com/gpu.clique": "uuid1.0"}, {"nvidia.com/gpu.clique": "uuid2.0"}, ["nvlink"], id="gfd-clique"
        ),
        pytest.param(
            {f"{NV}/datacenter": "dc1", f"{NV}/spine": "s1", f"{NV}/block": "b1", f"{NV}/accelerator": "nvl1"},
            {f"{NV}/datacenter": "dc1", f"{NV}/spine": "s1", f"{NV}/block": "b2", f"{NV}/accelerator": "nvl2"},
            ["datacenter", "spine", "block", "nvlink"],
            id="topograph-v0.1",
        ),
        pytest.param(
            {f"{NV}/core": "c1", f"{NV}/spine": "s1", f"{NV}/leaf": "l1", f"{NV}/accelerator": "nvl1"},
            {f"{NV}/core": "c1", f"{NV}/spine": "s2", f"{NV}/leaf": "l2", f"{NV}/accelerator": "nvl2"},
            ["core", "spine", "leaf", "nvlink"],
            id="topograph-v0.3",
        ),
        pytest.param(
            {
                "fabric.topograph.run/tier-0": "t0a",
                "fabric.topograph.run/tier-1": "t1",
                "fabric.topograph.run/tier-2": "t2",
                "accelerator.topograph.run/domain": "d1",
                "accelerator.topograph.run/sub-domain": "d1.0",
            },
            {
                "fabric.topograph.run/tier-0": "t0b",
                "fabric.topograph.run/tier-1": "t1",
                "fabric.topograph.run/tier-2": "t2",
                "accelerator.topograph.run/domain": "d2",
                "accelerator.topograph.run/sub-domain": "d2.0",
            },
            # tier 0 is nearest the node, so the broadest tier comes first
            ["tier-2", "tier-1", "tier-0", "nvlink", "nvlink-subdomain"],
            id="topograph-v1",
        ),
        pytest.param(
            {"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "z1"},
            {"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "z2"},
            ["region", "zone"],
            id="region-zone",
        ),
    ],
)
def test_label_families(labels_a: dict[str, str], labels_b: dict[str, str], levels: list[str]) -> None:
    topology = build_topology(_pair(labels_a, labels_b))
    assert [level.name for level in topology.levels] == [*levels, "host"]
    narrowest = levels[-1]
    assert topology.domain_of("a", narrowest) != topology.domain_of("b", narrowest)


def test_gfd_clique_wins_over_topograph_accelerator() -> None:
    labels = {"nvidia.com/gpu.clique": "uuid1.3", "accelerator.topograph.run/domain": "xhash"}
    topology = build_topology(_pair(labels, labels))
    assert topology.domain_of("a", "nvlink") == "uuid1.3"


def test_binding_overrides_the_defaults() -> None:
    nodes = _pair(
        {"example.com/rack": "r1", "topology.kubernetes.io/zone": "z"},
        {"example.com/rack": "r2", "topology.kubernetes.io/zone": "z"},
    )
    levels = levels_from_binding(make_topology_binding("t", [("rack", "example.com/rack")]).obj())
    topology = build_topology(nodes, levels=levels)
    assert [level.name for level in topology.levels] == ["rack", "host"]  # zone is not a level of the binding


def test_missing_labels_land_in_the_unknown_domain() -> None:
    nodes = [
        make_node("a").gpus(4).label("nvidia.com/gpu.clique", "c1").label("topology.kubernetes.io/zone", "z").obj(),
        make_node("b").gpus(4).obj(),  # no topology labels at all
        make_node("c").gpus(8).no_hostname_label().obj(),
    ]
    topology = build_topology(nodes)
    assert topology.domain_of("b", "nvlink") == UNKNOWN
    assert topology.domain_of("b", "zone") == UNKNOWN
    assert topology.domain_of("c", "host") == "c"  # the host level falls back to the node's name
    free = free_capacity(nodes, [make_pod("p").gpus(2).on("c").obj()])
    assert topology.free_per_domain("nvlink", free) == {"c1": 4, UNKNOWN: 10}  # b 4 + c (8 − 2)
    assert topology.lowest_common_level(["b", "c"]) is None  # sharing "unknown" is not sharing a domain


def test_no_nodes_no_crash() -> None:
    topology = build_topology([])
    assert [level.name for level in topology.levels] == ["host"]
