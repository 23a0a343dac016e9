"""Queue-aware planning in the replay: the engine hands the waiting gangs to a batch step together, books what it
starts, and keeps the accounting whole."""

from __future__ import annotations

import pytest

from benchmarks.replay.batch_step import BatchStep
from benchmarks.replay.engine import replay
from placement import SolveOptions
from tests.benchmarks.replay.fakes import gang, host, workload
from topology import Topology


def test_a_batch_starts_the_two_gangs_that_fill_the_node_rather_than_the_oldest_alone() -> None:
    # One 8-GPU node, full until t=100. Waiting then, in arrival order: a (6 GPUs), b (4), c (4). One gang at a
    # time in arrival order starts a and leaves 2 GPUs idle; the batch starts b and c (8 GPUs) and a once they end.
    hosts = [host("n1", gpus=8)]
    work = workload(
        hosts,
        [
            gang("busy", arrival=0, duration=100, pods=1, gpus=8),
            gang("a", arrival=10, duration=50, pods=1, gpus=6),
            gang("b", arrival=20, duration=50, pods=1, gpus=4),
            gang("c", arrival=30, duration=50, pods=1, gpus=4),
        ],
    )
    step = BatchStep(topology=Topology(hosts), size=16, options=SolveOptions(workers=1))
    outcome = replay(work, step, horizon=300)
    starts = {run.gang.key: run.start for run in outcome.runs}
    assert starts == {"ns/busy": 0, "ns/b": 100, "ns/c": 100, "ns/a": 150}
    # Running: 8×100 (busy) + 8×50 (b, c) + 6×50 (a) = 1,500 GPU-s of 8 × 300.
    assert outcome.running_gpu_seconds == pytest.approx(1500)
    total = outcome.running_gpu_seconds + outcome.held_gpu_seconds + outcome.idle_gpu_seconds
    assert total == pytest.approx(outcome.capacity_gpus * outcome.horizon)


def test_gangs_beyond_the_head_are_planned_in_a_later_call() -> None:
    # Three one-GPU gangs arrive together on a 4-GPU node; heads of one gang each: three calls, all start at once.
    hosts = [host("n1", gpus=4)]
    work = workload(hosts, [gang(f"g{i}", arrival=0, duration=10, pods=1, gpus=1) for i in range(3)])
    step = BatchStep(topology=Topology(hosts), size=1, options=SolveOptions(workers=1))
    outcome = replay(work, step, horizon=20)
    assert [run.start for run in outcome.runs] == [0, 0, 0]
    assert len(outcome.decision_seconds) == 3
