"""The snapshot generators: same seed, same bytes; and what they write is a snapshot the project can load."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from benchmarks.generate.scenarios import SCENARIOS, build
from scheduler.snapshot import dump_snapshot, load_snapshot
from tests.benchmarks.data import write_mini_traces


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return write_mini_traces(tmp_path / "data")


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_same_seed_same_bytes(scenario: str, data_dir: Path, tmp_path: Path) -> None:
    paths = [tmp_path / f"{scenario}-{n}.json.gz" for n in range(3)]
    for path, seed in zip(paths, (7, 7, 8), strict=True):
        dump_snapshot(build(scenario, seed=seed, data_dir=data_dir, gangs=12), path)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert paths[0].read_bytes() != paths[2].read_bytes()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_generated_snapshot_is_grove_shaped(scenario: str, data_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.json.gz"
    dump_snapshot(build(scenario, seed=1, data_dir=data_dir, gangs=12), path)
    snapshot = load_snapshot(path)
    assert len(snapshot.podgangs) == 12
    pods = {pod.key: pod for pod in snapshot.pods}
    arrivals = [gang.metadata.creationTimestamp for gang in snapshot.podgangs]
    assert arrivals == sorted(arrivals)
    for gang in snapshot.podgangs:
        assert int(gang.metadata.annotations["grove-extender/duration-seconds"]) > 0
        for group in gang.spec.podgroups:
            assert 0 < group.minReplicas <= len(group.podReferences)
            for ref in group.podReferences:
                pod = pods[f"{ref.namespace}/{ref.name}"]
                assert pod.metadata.labels["grove.io/podgang"] == gang.metadata.name
                assert not pod.spec.nodeName and pod.spec.schedulerName == "grove"
    assert json.loads(gzip.decompress(path.read_bytes()))["kind"] == "List"


def test_nvl72_racks_are_one_clique_each(data_dir: Path) -> None:
    nodes = [item for item in build("gb200-nvl72", seed=1, data_dir=data_dir, gangs=1) if item["kind"] == "Node"]
    cliques: dict[str, int] = {}
    for node in nodes:
        value = node["metadata"]["labels"]["nvidia.com/gpu.clique"]
        cluster_uuid, clique_id = value.split(".")
        assert len(cluster_uuid) == 36 and clique_id
        cliques[value] = cliques.get(value, 0) + int(node["status"]["allocatable"]["nvidia.com/gpu"])
    assert set(cliques.values()) == {72}  # 18 trays × 4 GPUs per NVL72 rack


def test_preemption_scenario_is_inference_on_a_cluster_full_of_training(data_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "p.json.gz"
    dump_snapshot(build("gb200-preemption", seed=1, data_dir=data_dir, gangs=80), path)
    snapshot = load_snapshot(path)
    classes = {c.name: (c.value, c.preemptionPolicy) for c in snapshot.priority_classes}
    assert classes == {"training": (100, "PreemptLowerPriority"), "inference": (10_000, "PreemptLowerPriority")}
    capacity = sum(node.allocatable()["nvidia.com/gpu"] for node in snapshot.nodes)
    assert capacity == 4 * 72  # four NVL72 racks
    start = snapshot.podgangs[0].metadata.creationTimestamp
    assert start is not None
    burst, extras, kinds = 0, 0, set()
    for gang in snapshot.podgangs:
        kind = gang.spec.priorityClassName
        kinds.add(kind)
        created = gang.metadata.creationTimestamp
        assert kind is not None and created is not None and gang.metadata.name.startswith(kind)
        groups = {group.name.rsplit("-", 1)[-1]: group for group in gang.spec.podgroups}
        if kind == "inference":
            # A leader and workers, all guaranteed, the whole gang required in one NVLink clique.
            assert set(groups) == {"leader", "worker"}
            assert gang.spec.topologyConstraint is not None
            assert gang.spec.topologyConstraint.packConstraint.required == "nvidia.com/gpu.clique"
            assert all(group.minReplicas == len(group.podReferences) for group in groups.values())
        else:
            worker = groups["worker"]
            extras += len(worker.podReferences) - worker.minReplicas
            if (created - start).total_seconds() < 60:
                burst += 4 * worker.minReplicas
    assert kinds == {"training", "inference"}
    assert extras > 0  # some training gangs carry best-effort workers above minReplicas
    assert burst >= 1.1 * capacity  # the first minute's training asks for more than the cluster has
