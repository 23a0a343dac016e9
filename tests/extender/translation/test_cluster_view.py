"""Topology levels are chosen file → binding → defaults; free capacity is allocatable − bound − reserved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.core import Node
from scheduler.extender.translation.cluster_view import (
    LevelsError,
    build_topology,
    choose_levels,
    cluster_view,
    free_capacity,
    load_levels_file,
    snapshot_view,
)
from scheduler.snapshot import parse_snapshot
from tests.builders import make_node, make_pod, make_topology_binding

ZONE = "topology.kubernetes.io/zone"
CLIQUE = "nvidia.com/gpu.clique"
RACK = "example.com/rack"


def _nodes() -> list[Node]:
    return [
        make_node("a").gpus(4).label(ZONE, "z1").label(CLIQUE, "c1.0").label(RACK, "r1").obj(),
        make_node("b").gpus(4).label(ZONE, "z1").label(CLIQUE, "c1.0").label(RACK, "r1").obj(),
        make_node("c").gpus(8).label(ZONE, "z2").label(RACK, "r2").obj(),
    ]


def test_defaults_recognise_zone_and_clique() -> None:
    topology = build_topology(_nodes())
    assert [level.name for level in topology.levels] == ["zone", "nvlink", "host"]
    assert topology.domain_of("a", "nvlink") == "c1.0"
    assert topology.domain_of("c", "nvlink") == "<unknown>"


def test_levels_file_as_a_list(tmp_path: Path) -> None:
    path = tmp_path / "levels.yaml"
    path.write_text(f"- {{domain: zone, key: {ZONE}}}\n- {{domain: rack, key: {RACK}}}\n")
    levels = load_levels_file(path)
    assert [level.name for level in levels] == ["zone", "rack", "host"]  # host appended: placements end on hosts
    topology = build_topology(_nodes(), levels=levels)
    assert topology.domains("rack") == {"r1": ("a", "b"), "r2": ("c",)}


def test_levels_file_as_json_binding(tmp_path: Path) -> None:
    path = tmp_path / "ctb.json"
    binding = {"kind": "ClusterTopologyBinding", "spec": {"levels": [{"domain": "rack", "key": RACK}]}}
    path.write_text(json.dumps(binding))
    assert [level.keys for level in load_levels_file(path)] == [(RACK,), ("kubernetes.io/hostname",)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("{}", "non-empty list", id="not-a-list"),
        pytest.param("[]", "non-empty list", id="empty"),
        pytest.param("- 3\n", r"entry \[0\] is not", id="not-an-object"),
        pytest.param("- {domain: rack}\n", r"entry \[0\]\.key", id="no-key"),
        pytest.param(f"- {{domain: '', key: {RACK}}}\n", r"entry \[0\]\.domain", id="empty-domain"),
        pytest.param(f"- {{domain: r, key: {RACK}}}\n- {{domain: r, key: {ZONE}}}\n", "duplicate", id="duplicate"),
        pytest.param("- [unclosed\n", "not valid JSON or YAML", id="broken-yaml"),
        pytest.param("[" * 20_000 + "]" * 20_000, "nested too deeply", id="deep"),
        pytest.param(b"- {domain: \xff}\n", "not UTF-8 text", id="not-utf8"),
    ],
)
def test_bad_levels_files_name_the_entry(tmp_path: Path, text: str | bytes, message: str) -> None:
    path = tmp_path / "levels.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(LevelsError, match=message):
        load_levels_file(path)


def test_missing_levels_file() -> None:
    with pytest.raises(LevelsError, match="no-such-file"):
        load_levels_file("/nonexistent/no-such-file.yaml")


def test_levels_file_beats_binding_beats_defaults(tmp_path: Path) -> None:
    path = tmp_path / "levels.yaml"
    path.write_text(f"- {{domain: zone, key: {ZONE}}}\n")
    binding = make_topology_binding("b", [("rack", RACK)]).obj()
    by_file = choose_levels(levels_file=path, bindings=[binding])
    assert by_file is not None and [level.name for level in by_file] == ["zone", "host"]
    by_binding = choose_levels(bindings=[binding])
    assert by_binding is not None and [level.name for level in by_binding] == ["rack", "host"]
    assert choose_levels() is None


def test_several_bindings_pick_the_first_by_name() -> None:
    levels = choose_levels(
        bindings=[
            make_topology_binding("zz", [("zone", ZONE)]).obj(),
            make_topology_binding("aa", [("rack", RACK)]).obj(),
        ]
    )
    assert levels is not None and levels[0].name == "rack"


def test_free_capacity_counts_bound_non_terminal_pods_and_reservations() -> None:
    nodes = [make_node("a").gpus(8).cpu("96").obj(), make_node("b").gpus(8).obj()]
    pods = [
        make_pod("bound").gpus(4).cpu("10").on("a").obj(),
        make_pod("terminating").gpus(1).on("a").deleting().obj(),  # still holds its GPU until it is gone
        make_pod("done").gpus(2).on("a").phase("Succeeded").obj(),
        make_pod("failed").gpus(2).on("b").phase("Failed").obj(),
        make_pod("pending").gpus(8).obj(),
        make_pod("elsewhere").gpus(8).on("gone").obj(),  # bound to a node outside the view: ignored
    ]
    free = free_capacity(nodes, pods, reservations={"b": {"nvidia.com/gpu": 3}, "gone": {"nvidia.com/gpu": 1}})
    # a: 8 − 4 − 1 GPUs; 96 − 10 cpu; 110 − 2 pod slots.  b: 8 − 3 reserved.
    assert free["a"] == {"nvidia.com/gpu": 3, "cpu": 86_000, "memory": 1000 * 2**30, "pods": 108}
    assert free["b"]["nvidia.com/gpu"] == 5
    assert set(free) == {"a", "b"}


def test_devices_a_pod_claims_through_dra_are_never_counted_as_free_gpus() -> None:
    # The extender counts GPUs from allocatable nvidia.com/gpu (the device plugin's) less extended-resource
    # requests; devices a ResourceClaim holds are a DRA driver's, published in ResourceSlices, not in allocatable.
    # So a bound pod's claims neither free nor take counted GPUs, and a node whose GPUs DRA manages has none free
    # to plan on: the claims' fit is kube-scheduler's DynamicResources plugin's, whose refusals the extender
    # re-plans around.
    nodes = [make_node("plugin").gpus(8).obj(), make_node("dra").obj()]
    pods = [
        make_pod("both").gpus(2).claim("shared", template="gpu-claim").on("plugin").obj(),
        make_pod("claims-only").claim("training-0-gpu").claim("mnnvl-claim", template="training-0-g").on("dra").obj(),
    ]
    free = free_capacity(nodes, pods)
    assert free["plugin"]["nvidia.com/gpu"] == 6  # 8 − the 2 requested; the claim counts for nothing either way
    assert "nvidia.com/gpu" not in free["dra"]
    assert pods[1].requests() == {"pods": 1}  # a claim is no extended-resource demand


def test_over_committed_node_has_nothing_free() -> None:
    nodes = [make_node("a").gpus(4).obj()]
    pods = [make_pod("x").gpus(4).on("a").obj(), make_pod("y").gpus(4).on("a").obj()]
    assert free_capacity(nodes, pods)["a"]["nvidia.com/gpu"] == 0


def test_cluster_view_and_snapshot_view_agree() -> None:
    node_dicts = [make_node("a").gpus(8).label(RACK, "r1").dict(), make_node("b").gpus(8).label(RACK, "r1").dict()]
    binding = make_topology_binding("t", [("rack", RACK)]).dict()
    pod = make_pod("p").gpus(6).on("b").dict()
    snapshot = parse_snapshot({"kind": "List", "items": [*node_dicts, pod, binding]})
    view = snapshot_view(snapshot)
    assert [level.name for level in view.topology.levels] == ["rack", "host"]
    assert view.topology.free_per_domain("rack", view.free) == {"r1": 10}  # 8 + (8 − 6)
    direct = cluster_view(snapshot.nodes, snapshot.pods, levels=view.topology.levels)
    assert direct.free == view.free
