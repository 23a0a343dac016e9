"""The bundled demo snapshot is what its seeded script writes, and holds the cluster the README promises."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from benchmarks.make_demo import DEFAULT_OUT, build_items
from scheduler.extender.translation.cluster_view import snapshot_view
from scheduler.extender.translation.gang_request import gang_request
from scheduler.snapshot import dump_snapshot, load_snapshot
from tests.conftest import REPO_ROOT


def test_script_regenerates_the_file_byte_for_byte(tmp_path: Path) -> None:
    assert DEFAULT_OUT == REPO_ROOT / "benchmarks" / "snapshots" / "demo.json"
    fresh = tmp_path / "demo.json"
    dump_snapshot(build_items(), fresh)
    assert fresh.read_bytes() == DEFAULT_OUT.read_bytes(), "run: python benchmarks/make_demo.py"


def test_a_different_seed_gives_a_different_cluster(tmp_path: Path) -> None:
    assert build_items(seed=1) != build_items()


def test_demo_cluster_shape() -> None:
    snapshot = load_snapshot(DEFAULT_OUT)
    view = snapshot_view(snapshot)
    topology = view.topology
    cliques = {domain: len(nodes) for domain, nodes in topology.domains("nvlink").items() if domain != "<unknown>"}
    assert sorted(cliques.values()) == [18, 18]  # two NVL72 racks of 18 trays
    products = Counter(node.metadata.labels["nvidia.com/gpu.product"] for node in snapshot.nodes)
    assert products == {"NVIDIA-GB200": 36, "NVIDIA-H100-80GB-HBM3": 8}
    h100_leaves = {topology.domain_of(node.name, "leaf") for node in snapshot.nodes if node.name.startswith("dgx-h100")}
    assert len(h100_leaves) == 2
    total = sum(node.allocatable()["nvidia.com/gpu"] for node in snapshot.nodes)
    free = sum(units["nvidia.com/gpu"] for units in view.free.values())
    assert total == 36 * 4 + 8 * 8
    assert 0 < free < total  # some GPUs already used


def test_demo_pending_gangs_are_grove_shaped_and_plannable() -> None:
    snapshot = load_snapshot(DEFAULT_OUT)
    pods = {pod.key: pod for pod in snapshot.pods}
    pending = [g for g in snapshot.podgangs if g.status is not None and g.status.phase == "Pending"]
    assert len(pending) == 3
    for gang in pending:
        assert gang.metadata.creationTimestamp is not None
        assert int(gang.metadata.annotations["grove-extender/duration-seconds"]) > 0
        request = gang_request(gang, pods, snapshot.nodes)
        for group in request.groups:
            for key in group.pods:
                pod = pods[key]
                assert pod.metadata.labels["grove.io/podgang"] == gang.metadata.name
                assert pod.metadata.labels["grove.io/podclique"] == group.name
                assert pod.spec.schedulerName == "grove"
                assert not pod.gated
                assert not pod.spec.nodeName
        packs = [pack for pack in request.packs if pack.required or pack.preferred]
        assert packs, f"{gang.key} has no topology constraint"
