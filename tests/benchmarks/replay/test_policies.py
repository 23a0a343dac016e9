"""Every shipped policy on a small generated snapshot — through ``placement.solve`` directly and, for the gang
policies, through the gang coordinator ``serve`` uses: capacity is never exceeded at any event, the accounting
adds up, and gang policies neither hold nor strand GPUs nor break a ``required`` pack constraint."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.generate.scenarios import build
from benchmarks.replay.coordinator_step import CoordinatorStep
from benchmarks.replay.decision import DecisionStep
from benchmarks.replay.engine import replay
from benchmarks.replay.ledger import Ledger
from benchmarks.replay.loading import load_workload
from benchmarks.replay.preemption import Preemptor, candidates
from benchmarks.replay.quality import honours_required
from benchmarks.replay.solve_step import POD_BY_POD, SolveStep
from placement.request import SolveOptions
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangRef
from scheduler.extender.coordinator.victims import gather
from scheduler.snapshot import dump_snapshot, load_snapshot
from tests.benchmarks.data import write_mini_traces

POLICIES = ("cpsat", "topology-greedy", "gang-best-fit", "spread", "first-fit")


@pytest.fixture(scope="module")
def snapshot_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bench")
    path = root / "gb200.json.gz"
    # 24 gangs on 8 NVL72 racks at 3× load: queues form within a few arrivals.
    dump_snapshot(build("gb200-nvl72", seed=3, data_dir=write_mini_traces(root / "data"), gangs=24, load=3.0), path)
    return path


CASES = [pytest.param(policy, False, id=policy) for policy in POLICIES] + [
    pytest.param(policy, True, id=f"{policy}-via-coordinator") for policy in POLICIES if policy not in POD_BY_POD
]


@pytest.mark.parametrize(("policy", "via_coordinator"), CASES)
def test_policy_replay_is_sound(policy: str, via_coordinator: bool, snapshot_path: Path) -> None:
    snapshot = load_snapshot(snapshot_path)
    workload, topology = load_workload(snapshot)
    checks: list[float] = []

    def check(now: float, ledger: Ledger) -> None:
        ledger.check()
        for node, vector in ledger.free().items():
            allocatable = ledger.allocatable[node]
            assert all(0 <= vector[name] <= allocatable[name] for name in vector), node
        checks.append(now)

    step: DecisionStep
    if via_coordinator:
        step = CoordinatorStep(policy=policy, nodes=snapshot.nodes, time_limit_seconds=0.5)
    else:
        step = SolveStep(policy=policy, topology=topology, time_limit_seconds=0.5)
    outcome = replay(workload, step, observer=check)
    if isinstance(step, CoordinatorStep):
        # What the engine booked is what the coordinator bound, pod for pod, in the store serve would read.
        running = {
            pod: node
            for run in outcome.runs
            if run.start is not None and run.end is None
            for pod, node in run.bound.items()
        }
        in_store = {pod.key: pod.spec.nodeName for pod in step.store.pods() if pod.spec.nodeName}
        assert in_store == running
        step.close()
    assert checks and len(checks) == len(outcome.timeline)
    total = outcome.running_gpu_seconds + outcome.held_gpu_seconds + outcome.idle_gpu_seconds
    assert total == pytest.approx(outcome.capacity_gpus * outcome.horizon)
    assert any(run.start is not None for run in outcome.runs)
    if policy not in POD_BY_POD:
        assert outcome.held_gpu_seconds == 0
        assert all(run.bound == {} for run in outcome.runs if run.start is None)
    if policy in ("cpsat", "topology-greedy"):
        started = [run for run in outcome.runs if run.start is not None]
        assert all(honours_required(run.gang.request, run.bound, topology) for run in started)


@pytest.fixture(scope="module")
def preemption_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bench-preemption")
    path = root / "gb200-preemption.json.gz"
    # The shipped preemption scenario at 36 gangs: a burst of training fills the 4 racks, inference arrives after.
    dump_snapshot(build("gb200-preemption", seed=2, data_dir=write_mini_traces(root / "data"), gangs=36), path)
    return path


@pytest.mark.parametrize("chooser", ["cpsat", "kai-greedy"])
def test_preemption_through_the_coordinator_agrees_with_the_engine_and_the_extender(
    chooser: str, preemption_path: Path
) -> None:
    snapshot = load_snapshot(preemption_path)
    workload, topology = load_workload(snapshot)
    step = CoordinatorStep(
        policy="cpsat", nodes=snapshot.nodes, priority_classes=snapshot.priority_classes, time_limit_seconds=2.0
    )
    preemptor = Preemptor(chooser, SolveOptions(workers=1, time_limit_seconds=2.0), topology)
    outcome = replay(workload, step, preemptor=preemptor)
    step.close()
    applied = [record for record in outcome.preemptions if record.evicted]
    assert applied and all(record.started for record in applied)
    assert not outcome.broken
    # The writer evicted what the engine booked, pod for pod in number: the kubelet (finalize_evictions) deleted them.
    assert len(step.writer.evictions) == sum(record.choices[chooser].pods for record in applied)
    # What the engine runs is what the coordinator's store has bound.
    running = {pod: node for run in outcome.runs if run.running for pod, node in run.bound.items()}
    assert {pod.key: pod.spec.nodeName for pod in step.store.pods() if pod.spec.nodeName} == running
    # The engine's candidates for an inference gang are those the extender gathers from the same cluster.
    inference = next(run.gang for run in outcome.runs if run.gang.priority == max(g.priority for g in workload.gangs))
    victims, gangs = candidates(inference.request, ((run.gang, run.bound) for run in outcome.runs if run.running))
    assert victims
    found = gather(
        store=step.store,
        table=GangTable(),
        preemptor=GangRef(inference.request.namespace, inference.request.name),
        priority=inference.priority,
        evict=True,
        useful=None,
    )
    assert sorted(found.victims, key=lambda v: v.key) == sorted(victims, key=lambda v: v.key)
    assert found.gangs == gangs
