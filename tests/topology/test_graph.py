"""``topology.graph.Topology`` queries over hand-built hosts: shared domains, spans, distances, free capacity, GPUs.

Two racks (GB200-like NVLink cliques) in one zone, plus hosts with missing labels, so every query meets both the
fully labelled and the partly labelled case.
"""

from __future__ import annotations

import pytest

from api.core import GPU
from topology.graph import GPU_RESOURCE, UNKNOWN, HostSpec, Topology
from topology.levels import HOSTNAME_KEY, Level, active_levels, levels_from_pairs

ZONE, CLIQUE, TIER = "topology.kubernetes.io/zone", "nvidia.com/gpu.clique", "fabric.topograph.run/tier-"


def host(name: str, *, gpus: int = 4, **labels: str) -> HostSpec:
    keys = {"zone": ZONE, "clique": CLIQUE, "tier0": f"{TIER}0", "tier1": f"{TIER}1"}
    return HostSpec(name, {HOSTNAME_KEY: name, **{keys[k]: v for k, v in labels.items()}}, {"nvidia.com/gpu": gpus})


@pytest.fixture
def racks() -> Topology:
    return Topology(
        [
            host("r0a", zone="z", clique="c0"),
            host("r0b", zone="z", clique="c0"),
            host("r1a", zone="z", clique="c1"),
            host("nz0", clique="c0"),  # in rack 0 but its zone label is missing
            host("bare1"),  # no topology label at all
            host("bare2"),
        ]
    )


def test_levels_are_the_labelled_ones(racks: Topology) -> None:
    assert [level.name for level in racks.levels] == ["zone", "nvlink", "host"]


@pytest.mark.parametrize(
    ("nodes", "level"),
    [
        pytest.param(["r0a"], "host", id="one-node"),
        pytest.param(["r0a", "r0b"], "nvlink", id="same-rack"),
        pytest.param(["r0a", "r1a"], "zone", id="two-racks-one-zone"),
        pytest.param(["r0a", "nz0"], "nvlink", id="same-rack-zone-unknown-on-one"),
        pytest.param(["r1a", "nz0"], None, id="rack-differs-zone-unknown"),
        pytest.param(["bare1", "bare2"], None, id="both-unlabelled"),
        pytest.param([], None, id="nothing"),
    ],
)
def test_lowest_common_level(racks: Topology, nodes: list[str], level: str | None) -> None:
    found = racks.lowest_common_level(nodes)
    assert (found.name if found else None) == level


@pytest.mark.parametrize(
    ("a", "b", "hops"),
    [
        pytest.param("r0a", "r0a", 0, id="same-host"),
        pytest.param("r0a", "r0b", 1, id="same-rack"),  # 3 levels − shared (zone, nvlink)
        pytest.param("r0a", "r1a", 2, id="same-zone"),  # 3 − shared (zone)
        pytest.param("r0a", "nz0", 1, id="same-rack-zone-unknown"),  # as if labelled: nvlink is shared
        pytest.param("r1a", "nz0", 3, id="nothing-shared"),
        pytest.param("bare1", "bare2", 3, id="unlabelled"),
    ],
)
def test_distance(racks: Topology, a: str, b: str, hops: int) -> None:
    assert racks.distance(a, b) == hops
    assert racks.distance(b, a) == hops


@pytest.mark.parametrize(
    ("nodes", "level", "count"),
    [
        pytest.param(["r0a", "r0b", "nz0"], "nvlink", 1, id="one-rack"),
        pytest.param(["r0a", "r1a"], "nvlink", 2, id="two-racks"),
        pytest.param(["r0a", "r1a"], "zone", 1, id="one-zone"),
        pytest.param(["r0a", "nz0"], "zone", 2, id="unknown-zone-counts-apart"),
        pytest.param(["bare1", "bare2", "r0a"], "nvlink", 3, id="unlabelled-count-one-each"),
        pytest.param(["r0a", "r0b"], "host", 2, id="hosts"),
        pytest.param([], "zone", 0, id="nothing"),
    ],
)
def test_domains_spanned(racks: Topology, nodes: list[str], level: str, count: int) -> None:
    assert racks.domains_spanned(nodes, level) == count
    assert racks.domains_spanned(iter(nodes), level) == count  # any iterable, read once


def test_free_per_domain(racks: Topology) -> None:
    free = {"r0a": {"nvidia.com/gpu": 1}, "r0b": {"nvidia.com/gpu": 4}, "nz0": {"nvidia.com/gpu": 2}, "bare1": {}}
    assert racks.free_per_domain("nvlink", free) == {"c0": 7, "c1": 0, UNKNOWN: 0}  # c0: 1 + 4 + 2
    assert racks.free_per_domain("zone", free) == {"z": 5, UNKNOWN: 2}  # z: r0a 1 + r0b 4; nz0 has no zone
    assert racks.free_per_domain("nvlink", free, resource="cpu") == {"c0": 0, "c1": 0, UNKNOWN: 0}


def test_gpus_are_graph_nodes_in_numeric_device_order() -> None:
    topology = Topology([host("big", gpus=16), host("cpu-only", gpus=0)])
    assert [gpu[1] for gpu in topology.gpus("big")] == [f"big/{i}" for i in range(16)]
    assert topology.gpus("cpu-only") == []
    assert all(topology.graph.nodes[gpu]["kind"] == "gpu" for gpu in topology.gpus("big"))
    assert set(topology.graph.successors(("host", "big"))) == set(topology.gpus("big"))


def test_the_graph_is_built_only_when_asked_for() -> None:
    # Placement reads flat paths; a vertex per GPU cost 0.6 s of a 10,000-node build that no plan used.
    topology = Topology([host("a", clique="c0"), host("b", clique="c0")])
    assert topology.distance("a", "b") == 1 and topology.domains("nvlink") == {"c0": ("a", "b")}
    assert "graph" not in vars(topology)
    assert topology.graph.number_of_nodes() == 1 + 1 + 2 + 8  # cluster, clique c0, two hosts, 4 GPUs each


def test_topograph_v1_tiers_are_discovered_broad_first_and_sit_above_nvlink() -> None:
    hosts = [host("a", tier0="leaf1", tier1="spine", clique="c0"), host("b", tier0="leaf2", tier1="spine")]
    topology = Topology(hosts)
    assert [level.name for level in topology.levels] == ["tier-1", "tier-0", "nvlink", "host"]
    assert topology.lowest_common_level(["a", "b"]) == topology.level("tier-1")
    assert topology.distance("a", "b") == 3  # 4 levels − shared (tier-1)


def test_explicit_levels_do_not_discover_tiers() -> None:
    hosts = [host("a", tier0="leaf1", zone="z"), host("b", tier0="leaf2", zone="z")]
    topology = Topology(hosts, levels_from_pairs([("zone", ZONE)]))
    assert [level.name for level in topology.levels] == ["zone", "host"]


@pytest.mark.parametrize(
    ("pairs", "names"),
    [
        pytest.param([("zone", ZONE), ("rack", CLIQUE)], ["zone", "rack", "host"], id="host-omitted-is-appended"),
        pytest.param(
            [("zone", ZONE), ("rack", CLIQUE), ("host", HOSTNAME_KEY)], ["zone", "rack", "host"], id="host-listed"
        ),
        pytest.param([("rack", CLIQUE), ("node", HOSTNAME_KEY)], ["rack", "node"], id="host-under-another-name"),
        pytest.param([("rack", CLIQUE), ("host", "example.com/host")], ["rack", "host"], id="host-by-other-key"),
        pytest.param(
            [("rack", CLIQUE), ("host", HOSTNAME_KEY), ("numa", "example.com/numa")],
            ["rack", "host"],
            id="finer-than-host-dropped",
        ),
    ],
)
def test_binding_levels_end_on_one_host_level(pairs: list[tuple[str, str]], names: list[str]) -> None:
    hosts = [host("a", zone="z", clique="c0"), host("b", zone="z", clique="c1")]
    hosts = [HostSpec(h.name, {**h.labels, "example.com/numa": "0"}, h.allocatable) for h in hosts]
    topology = Topology(hosts, levels_from_pairs(pairs))
    assert [level.name for level in topology.levels] == names
    # "numa" = "0" on both must never make two hosts of different racks look close
    assert topology.lowest_common_level(["a", "b"]) == (topology.level("zone") if "zone" in names else None)
    assert topology.domain_of("b", names[-1]) == "b"  # the host level falls back to the node's name


def test_host_level_missing_from_every_node_falls_back_to_names() -> None:
    levels = active_levels([{}, {}], [Level("rack", (CLIQUE,)), Level("host", ("example.com/host",))])
    assert [level.name for level in levels] == ["host"]
    topology = Topology([HostSpec("a"), HostSpec("b")], levels)
    assert topology.domains("host") == {"a": ("a",), "b": ("b",)}
    assert topology.distance("a", "b") == 1


def test_duplicate_binding_domains_are_refused() -> None:
    with pytest.raises(ValueError, match="duplicate domain names"):
        levels_from_pairs([("rack", CLIQUE), ("rack", ZONE)])


def test_both_ground_layers_name_the_gpu_resource_alike() -> None:
    # topology and api import nothing of ours, so each spells the resource once; the placement side and the
    # Kubernetes side must mean the same resource.
    assert GPU_RESOURCE == GPU == "nvidia.com/gpu"
