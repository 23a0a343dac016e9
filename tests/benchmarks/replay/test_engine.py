"""The replay's event loop: accounting that adds up, capacity never exceeded, FIFO with backfill, holding."""

from __future__ import annotations

import pytest

from benchmarks.replay.decision import DecisionStep
from benchmarks.replay.engine import GangRun, ReplayOutcome, replay
from benchmarks.replay.ledger import Ledger, OvercommitError
from tests.benchmarks.replay.fakes import FirstFitGang, FirstFitPodByPod, Overcommitter, gang, host, workload


def _identity_holds(out: ReplayOutcome) -> None:
    """Every GPU-second of the window is running, held, background or idle: nothing lost, nothing counted twice."""
    total = out.running_gpu_seconds + out.held_gpu_seconds + out.background_gpu_seconds + out.idle_gpu_seconds
    assert total == pytest.approx(out.capacity_gpus * out.horizon)


def test_gang_accounting_adds_up_to_capacity_times_time() -> None:
    # 2 nodes × 4 GPUs. A: 2×2 GPUs [0, 100) on n1. B: 2×4 GPUs arrives at 10, waits for A, runs [100, 150).
    # C: 1×2 GPUs [20, 50) on n2 (backfilled past the waiting B).
    work = workload(
        [host("n1", gpus=4), host("n2", gpus=4)],
        [
            gang("a", arrival=0, duration=100, pods=2, gpus=2),
            gang("b", arrival=10, duration=50, pods=2, gpus=4),
            gang("c", arrival=20, duration=30, pods=1, gpus=2),
        ],
    )
    outcome = replay(work, FirstFitGang(), horizon=200)
    starts = {run.gang.key: (run.start, run.end) for run in outcome.runs}
    assert starts == {"ns/a": (0, 100), "ns/b": (100, 150), "ns/c": (20, 50)}
    # Delivered: 4×100 + 8×50 + 2×30 = 860 GPU-s; idle = 8×200 − 860 = 740.
    assert outcome.running_gpu_seconds == pytest.approx(860)
    assert outcome.idle_gpu_seconds == pytest.approx(740)
    assert outcome.held_gpu_seconds == 0
    _identity_holds(outcome)


def _one_node_two_gangs(step: DecisionStep, horizon: float) -> tuple[ReplayOutcome, GangRun]:
    # One 4-GPU node. A: 1×2 GPUs over [0, 100). B arrives at 10 with 2×2 GPUs: only one of its pods fits.
    work = workload(
        [host("n1", gpus=4)],
        [gang("a", arrival=0, duration=100, pods=1, gpus=2), gang("b", arrival=10, duration=10, pods=2, gpus=2)],
    )
    outcome = replay(work, step, horizon=horizon)
    return outcome, next(run for run in outcome.runs if run.gang.key == "ns/b")


def test_pod_by_pod_holds_gpus_and_strands_them_when_the_gang_never_starts() -> None:
    outcome, b = _one_node_two_gangs(FirstFitPodByPod(), horizon=50)
    assert b.start is None and len(b.bound) == 1
    # B holds 2 GPUs over [10, 50): 80 GPU-s. A runs 2 GPUs over [0, 50): 100. Idle: 2 GPUs over [0, 10): 20.
    assert b.held_gpu_seconds == pytest.approx(80)
    assert outcome.running_gpu_seconds == pytest.approx(100)
    assert outcome.idle_gpu_seconds == pytest.approx(20)
    _identity_holds(outcome)


def test_all_or_nothing_never_holds() -> None:
    _, b = _one_node_two_gangs(FirstFitGang(), horizon=150)
    # B starts when A frees its GPUs at 100 and runs 10 s; it held nothing meanwhile.
    assert (b.start, b.end, b.held_gpu_seconds) == (100, 110, 0)


def test_capacity_is_never_exceeded_at_any_event() -> None:
    hosts = [host(f"n{i}", gpus=8) for i in range(3)]
    gangs = [
        gang(f"g{i}", arrival=i * 7, duration=30 + (i * 13) % 50, pods=1 + i % 4, gpus=1 + i % 8) for i in range(40)
    ]
    seen: list[float] = []

    def check(now: float, ledger: Ledger) -> None:
        ledger.check()
        free = ledger.free()
        assert all(amount >= 0 for vector in free.values() for amount in vector.values())
        seen.append(now)

    for step in (FirstFitGang(), FirstFitPodByPod()):
        seen.clear()
        outcome = replay(workload(hosts, gangs), step, horizon=400, observer=check)
        assert len(seen) == len(outcome.timeline) > 40
        _identity_holds(outcome)


def test_an_overcommitting_policy_fails_the_replay() -> None:
    work = workload([host("n1", gpus=4), host("n2", gpus=4)], [gang("a", arrival=0, duration=10, pods=3, gpus=2)])
    with pytest.raises(OvercommitError, match=r"n1: needs 2 nvidia\.com/gpu, 0 free"):
        replay(work, Overcommitter(), horizon=20)
