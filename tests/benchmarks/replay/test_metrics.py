"""Metrics on a scenario small enough to compute by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import pytest

from benchmarks.replay.engine import replay
from benchmarks.replay.fragmentation import make_fragmentation
from benchmarks.replay.metrics import percentile, summarise
from benchmarks.replay.quality import honours_required, make_domain_probe
from benchmarks.replay.workload import Workload
from placement.request import GangRequest, GroupRequest, PackScope
from tests.benchmarks.replay.fakes import CLIQUE, FirstFitGang, FirstFitPodByPod, gang, host, workload
from topology import Topology


def _scenario() -> tuple[Workload, Topology]:
    # Two 4-GPU nodes, each its own NVLink clique (c1, c2): 8 GPUs. Window 200 s.
    hosts = [host("n1", gpus=4, clique="c1"), host("n2", gpus=4, clique="c2")]
    gangs = [
        gang("a", arrival=0, duration=100, pods=2, gpus=2),  # 4 GPUs: n1 over [0, 100)
        gang("b", arrival=10, duration=50, pods=2, gpus=4),  # 8 GPUs: waits for A, n1+n2 over [100, 150)
        gang("c", arrival=20, duration=30, pods=1, gpus=2),  # 2 GPUs: n2 over [20, 50), backfilled past B
    ]
    return workload(hosts, gangs), Topology(hosts)


def test_metrics_by_hand() -> None:
    work, topology = _scenario()
    outcome = replay(
        work,
        FirstFitGang(),
        horizon=200,
        fragmentation=make_fragmentation(topology),
        probe=make_domain_probe(topology),
    )
    m = summarise(outcome, topology)
    assert m["gangsCompleted"] == 3
    # Delivered 4×100 + 8×50 + 2×30 = 860 GPU-s = 0.2389 h; utilisation 860 / (8 × 200) = 0.5375.
    assert m["gpuHoursDelivered"] == pytest.approx(860 / 3600, abs=1e-3)
    assert m["utilisation"] == pytest.approx(0.5375)
    assert m["gpuHoursStranded"] == 0 and m["gpuHoursViolating"] == 0
    # Waits: A 0, B 100 − 10 = 90, C 0 → mean 30; p95 by nearest rank is the 3rd of 3 → 90.
    assert (m["waitMeanSeconds"], m["waitP95Seconds"]) == (30.0, 90.0)
    # B waits over [10, 100). Its 4-GPU pods fit n2's 4 free GPUs except over [20, 50), when C leaves 2 there:
    # 2 fragmented GPUs × 30 s = 60 GPU-s, over a 200 s window → 0.3 GPUs on average.
    assert m["fragmentedGpus"] == pytest.approx(0.3)
    # A and C could fit one clique when placed and did; B (8 GPUs) could not (largest clique: 4) and spans 2.
    assert m["gangsFittingOneNvlinkDomain"] == 2
    assert m["oneNvlinkDomainShare"] == 1.0
    assert m["oneNvlinkDomainShareBySize"] == 1.0
    assert m["meanDomainsSpanned"] == pytest.approx(4 / 3, abs=1e-3)
    # Decisions: A at 0, C at 20, B at 100 (at 10 and 50 only 4 GPUs were free: skipped without asking).
    assert m["decisions"] == 3
    assert m["placementScoreMean"] == m["placementScoreP10"] == m["placementScoreP50"] == 1.0


def test_waits_of_gangs_that_never_start_are_censored_at_the_horizon() -> None:
    # One 4-GPU node: A holds 2 GPUs over [0, 100); B (2×2) binds one pod at 10 and waits; the window ends at 50.
    work = workload(
        [host("n1", gpus=4, clique="c1")],
        [gang("a", arrival=0, duration=100, pods=1, gpus=2), gang("b", arrival=10, duration=10, pods=2, gpus=2)],
    )
    topology = Topology(work.hosts)
    m = summarise(replay(work, FirstFitPodByPod(), horizon=50), topology)
    # Waits: A 0, B 50 − 10 = 40 (censored) → mean 20. B held 2 GPUs over [10, 50): 80 GPU-s, all stranded.
    assert m["waitMeanSeconds"] == 20.0
    assert m["gpuHoursStranded"] == pytest.approx(80 / 3600, abs=1e-3)
    assert m["gangsCompleted"] == 0 and m["gangsStarted"] == 1


def test_gpu_time_against_a_required_constraint_is_not_delivered() -> None:
    # B (2×4 GPUs) requires one clique, but each clique has only 4 GPUs: the pod-by-pod step splits it anyway.
    hosts = [host("n1", gpus=4, clique="c1"), host("n2", gpus=4, clique="c2")]
    work = workload(hosts, [gang("b", arrival=0, duration=10, pods=2, gpus=4, required=CLIQUE)])
    topology = Topology(hosts)
    outcome = replay(work, FirstFitPodByPod(), horizon=20)
    assert not honours_required(outcome.runs[0].gang.request, outcome.runs[0].bound, topology)
    m = summarise(outcome, topology)
    # 8 GPUs × 10 s = 80 GPU-s ran, none of it as asked.
    assert m["gpuHoursDelivered"] == 0
    assert m["gpuHoursViolating"] == pytest.approx(80 / 3600, abs=1e-3)
    assert m["gangsViolatingRequired"] == 1


@pytest.mark.parametrize(
    ("values", "share", "expected"),
    [
        pytest.param([], 0.5, 0.0, id="empty"),
        pytest.param([5.0], 0.99, 5.0, id="one"),
        pytest.param([float(v) for v in range(1, 101)], 0.95, 95.0, id="rank-95-of-100"),
        pytest.param([3.0, 1.0, 2.0], 0.5, 2.0, id="unsorted-median"),
    ],
)
def test_percentile_nearest_rank(values: list[float], share: float, expected: float) -> None:
    assert percentile(values, share) == expected


def test_unlabelled_nodes_are_no_pooled_domain_for_a_required_pack() -> None:
    # n1 carries clique c1 with 4 free GPUs; n2 and n3 carry no clique label, 4 free GPUs each. A gang needing
    # 2 × 4 GPUs in one clique can use neither: c1 holds 4 < 8, and the unlabelled nodes are no clique at all
    # (lumped together they would look like an 8-GPU domain). All 12 free GPUs are fragmented.
    topology = Topology([host("n1", gpus=4, clique="c1"), host("n2", gpus=4), host("n3", gpus=4)])
    group = GroupRequest(name="w", pods=("ns/w-0", "ns/w-1"), demand={"nvidia.com/gpu": 4, "pods": 1}, min_replicas=2)
    request = GangRequest(namespace="ns", name="g", groups=(group,), packs=(PackScope(groups=("w",), required=CLIQUE),))
    free = {name: {"nvidia.com/gpu": 4, "pods": 110} for name in ("n1", "n2", "n3")}
    assert make_fragmentation(topology)([request], free) == 12
    # Without the pack constraint every node could take a pod: nothing is fragmented.
    unpacked = GangRequest(namespace="ns", name="g", groups=(group,))
    assert make_fragmentation(topology)([unpacked], free) == 0
