"""The packing benchmark: a fill stops at the first gang that does not fit, FGD's measure as the paper defines it,
and ``grove-extender bench --fill`` end to end (JSON keys, table, PNG, a trace as the shapes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.packing.fgd import fgd_fragmented_gpus, typical_pods
from benchmarks.packing.fill import FillRun, fill
from benchmarks.packing.templates import templates_from_trace
from benchmarks.replay.fragmentation import make_fragmentation
from placement import ClusterView, GangRequest, SolveOptions
from scheduler.cli import main
from tests.benchmarks.data import small_h100_snapshot, write_mini_traces
from tests.placement.cluster import CLIQUE, GPU, gang, group, hosts, pack, view

FILL_KEYS = {
    "fillAllocatedGpuShare",
    "fillUnallocatedGpus",
    "fillGangsPlaced",
    "fillGangsAgainstRequired",
    "fillFgdFragmentedGpus",
    "fillFragmentedGpus",
}


def one_fill(templates: list[GangRequest], cluster: ClusterView, policy: str) -> FillRun:
    """Seed 1 of a fill of ``cluster`` from its free capacity, with FGD's typical pods and our measure."""
    return fill(
        templates,
        topology=cluster.topology,
        start=cluster.free,
        seed=1,
        options=SolveOptions(policy=policy, workers=1),
        tasks=typical_pods(templates),
        fragmentation=make_fragmentation(cluster.topology),
    )


@pytest.mark.parametrize("policy", ["cpsat", "topology-greedy"])
def test_a_fill_stops_at_the_first_gang_that_does_not_fit(policy: str) -> None:
    # Two 8-GPU nodes, every gang one 3-GPU pod: each node takes two (6 GPUs), the fifth gang fits nowhere.
    # Unallocated then: 2 + 2 = 4 GPUs, 12 of 16 allocated; FGD: the only typical pod (3 GPUs) fits no node, so
    # both nodes' 2 free GPUs are fragments (4); ours: no gang could use them either (4).
    run = one_fill([gang(group("w", 1, gpus=3))], view(hosts(cliques=1)), policy)
    assert run.placed == 4
    assert run.unallocated_gpus == 4 and run.allocated_share == pytest.approx(12 / 16)
    assert run.fgd_fragmented_gpus == pytest.approx(4) and run.fragmented_gpus == 4
    assert run.curve[0] == (0, 0.0) and run.curve[-1] == (4, pytest.approx(0.75))
    assert "3 GPUs" in run.first_failure and run.against_required == 0


def test_a_topology_blind_fill_counts_the_gangs_it_placed_against_a_required_pack() -> None:
    # Two cliques of two 8-GPU nodes, z0c0h1 and z0c1h0 with 5 GPUs free; every gang 2 × 5 GPUs, required in one
    # clique. Best fit, blind to the pack, takes the two fullest nodes that fit a pod, z0c0h1 and z0c1h0: two
    # cliques. topology-greedy keeps each gang in one clique.
    cluster = view(hosts(), used={"z0c0h1": {GPU: 3}, "z0c1h0": {GPU: 3}})
    templates = [gang(group("w", 2, gpus=5), packs=[pack("w", required=CLIQUE)])]
    runs = {policy: one_fill(templates, cluster, policy) for policy in ("gang-best-fit", "topology-greedy")}
    assert runs["topology-greedy"].against_required == 0
    assert runs["gang-best-fit"].against_required > 0


def test_fgd_counts_a_nodes_free_gpus_for_each_typical_pod_it_cannot_run() -> None:
    # Typical pods: 1-GPU (3 of the 4 pods, popularity 3/4) and 4-GPU (1/4). Node a has 2 free GPUs: the 1-GPU pod
    # runs, the 4-GPU one does not: 1/4 × 2. Node b has 4 free: both run: 0. Node c has no GPU free: nothing.
    templates = [gang(group("small", 3, gpus=1)), gang(group("large", 1, gpus=4))]
    tasks = typical_pods(templates)
    free = {"a": {GPU: 2}, "b": {GPU: 4}, "c": {GPU: 0}}
    assert fgd_fragmented_gpus(free, tasks) == pytest.approx(0.25 * 2)
    # A pod that lacks CPU on a node cannot run there either: all of that node's free GPUs count.
    cpu_bound = [gang(group("w", 1, gpus=1, cpu=8_000))]
    assert fgd_fragmented_gpus({"a": {GPU: 3, "cpu": 4_000}}, typical_pods(cpu_bound)) == pytest.approx(3)


def test_an_openb_pod_list_gives_one_single_pod_gang_per_gpu_pod(tmp_path: Path) -> None:
    trace = write_mini_traces(tmp_path) / "alibaba-gpu-v2023" / "openb_pod_list_default.csv"
    templates = templates_from_trace(trace)
    assert len(templates) == 12  # every row of the miniature asks for 1 or 2 GPUs
    first = templates[0].groups[0]
    assert first.demand[GPU] in (1, 2) and first.demand["cpu"] == 1000 and len(first.pods) == 1


@pytest.fixture(scope="module")
def snapshot_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_h100_snapshot(tmp_path_factory.mktemp("fill"))


def test_bench_fill_writes_table_json_and_plot(
    snapshot_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, png = tmp_path / "fill.json", tmp_path / "fill.png"
    argv = ["bench", "--fill", "--snapshot", str(snapshot_path), "--policy", "cpsat,topology-greedy", "--seeds", "2"]
    assert main([*argv, "--workers", "1", "--json", str(out), "--plot", str(png)]) == 0
    report = json.loads(out.read_text())
    assert list(report["policies"]) == ["cpsat", "topology-greedy"]
    for metrics in report["policies"].values():
        assert set(metrics) >= FILL_KEYS
        assert [entry["seed"] for entry in metrics["seeds"]] == [1, 2]
        assert 0 < metrics["fillAllocatedGpuShare"] <= 1
    table = capsys.readouterr().out
    assert "| topology-greedy |" in table and "1.00×" in table
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_fill_draws_from_a_trace_and_refuses_an_empty_one(
    snapshot_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write_mini_traces(tmp_path / "data") / "alibaba-gpu-v2023" / "openb_pod_list_default.csv"
    argv = ["bench", "--fill", "--snapshot", str(snapshot_path), "--policy", "topology-greedy", "--seeds", "1"]
    assert main([*argv, "--shapes", str(trace)]) == 0
    assert "gangs drawn from" in capsys.readouterr().out
    empty = tmp_path / "empty.csv"
    empty.write_text("name,cpu_milli,memory_mib,num_gpu\np,1000,1024,0\n")
    assert main([*argv, "--shapes", str(empty)]) == 2
    assert "no GPU gang to draw" in capsys.readouterr().err
