"""Priorities and preemption in the replay's event loop, on clusters small enough to follow by hand: the queue goes
highest priority first, a whole lower gang is evicted, loses its run and waits again, a gang that can spare pods
above its minReplicas keeps running, both victim choosers are recorded on every decision, and the accounting adds up.
The placements are ``placement.solve``'s (cpsat, one worker); the victims are ``placement.preemption``'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from benchmarks.replay.engine import ReplayOutcome, replay
from benchmarks.replay.metrics import summarise
from benchmarks.replay.preemption import CHOOSERS, Choice, PreemptionViolation, Preemptor
from benchmarks.replay.solve_step import SolveStep
from benchmarks.replay.workload import ReplayGang
from placement.preemption import Preemption, PreemptionCost, Victim, VictimGang
from placement.request import ClusterView, GangRequest, SolveOptions, Status
from tests.benchmarks.replay.fakes import CLIQUE, FirstFitGang, gang, host, workload
from topology import HostSpec, Topology

OPTIONS = SolveOptions(workers=1, time_limit_seconds=10.0)


def _replay(
    hosts: Sequence[HostSpec], gangs: Sequence[ReplayGang], *, policy: str | None, horizon: float = 200
) -> tuple[ReplayOutcome, dict[str, object]]:
    topology = Topology(hosts)
    step = SolveStep(policy="cpsat", topology=topology, workers=1)
    preemptor = Preemptor(policy, OPTIONS, topology) if policy else None
    outcome = replay(workload(hosts, gangs), step, horizon=horizon, preemptor=preemptor)
    total = outcome.running_gpu_seconds + outcome.held_gpu_seconds + outcome.idle_gpu_seconds
    assert total == pytest.approx(outcome.capacity_gpus * outcome.horizon)  # no background in these clusters
    return outcome, summarise(outcome, topology)


def _runs(outcome: ReplayOutcome) -> dict[str, tuple[float | None, float | None]]:
    return {run.gang.key.removeprefix("ns/"): (run.start, run.end) for run in outcome.runs}


@pytest.mark.parametrize("policy", [None, "cpsat"], ids=["no-preemption", "preemption-on"])
def test_the_queue_goes_highest_priority_first_and_never_preempts_for_a_gang_that_may_not(policy: str | None) -> None:
    # One 4-GPU node, busy with A over [0, 50). LOW (priority 0) arrives at 10, HIGH (priority 10, but its class
    # says preemptionPolicy Never) at 20; both need the whole node. At 50 HIGH goes first, LOW after it at 60.
    gangs = [
        gang("a", arrival=0, duration=50, pods=1, gpus=4),
        gang("low", arrival=10, duration=10, pods=1, gpus=4),
        gang("high", arrival=20, duration=10, pods=1, gpus=4, priority=10, preempts=False),
    ]
    outcome, m = _replay([host("n1", gpus=4)], gangs, policy=policy)
    assert _runs(outcome) == {"a": (0, 50), "high": (50, 60), "low": (60, 70)}
    assert outcome.preemptions == [] and m["preemptions"] == 0
    # Waits: A 0, LOW 60 − 10 = 50, HIGH 50 − 20 = 30; HIGH is the only gang above the lowest priority.
    assert (m["waitMeanSeconds"], m["highPriorityGangs"], m["highPriorityWaitMeanSeconds"]) == (26.7, 1, 30.0)


def test_a_whole_lower_gang_is_evicted_loses_its_run_and_waits_again() -> None:
    # Three 4-GPU nodes, full: BIG (2 pods × 4 GPUs) and SMALL (1 × 4), both priority 0, for 100 s. HIGH (priority
    # 10, 1 × 4) arrives at 10: evicting SMALL frees 4 GPUs, BIG 8, so SMALL goes, whole (it has one pod, its
    # minimum). It waits again from 10 and starts over when HIGH leaves at 30, running its full 100 s to 130.
    gangs = [
        gang("big", arrival=0, duration=100, pods=2, gpus=4),
        gang("small", arrival=1, duration=100, pods=1, gpus=4),
        gang("high", arrival=10, duration=20, pods=1, gpus=4, priority=10),
    ]
    outcome, m = _replay([host(f"n{i}", gpus=4) for i in range(3)], gangs, policy="cpsat")
    assert _runs(outcome) == {"big": (0, 100), "small": (30, 130), "high": (10, 30)}
    small = outcome.runs[1]
    assert (small.first_start, small.evictions, small.queued_seconds) == (1, 1, 20)
    assert (m["preemptions"], m["gpusEvicted"], m["gangsEvictedWhole"], m["gangsBroken"]) == (1, 4, 1, 0)
    # SMALL's first run, 4 GPUs over [1, 10), is thrown away: 36 GPU-s lost. It ran, so it is delivered too:
    # BIG 8 × 100 + SMALL 4 × 9 + HIGH 4 × 20 + SMALL again 4 × 100 = 1,316 GPU-s.
    assert m["gpuHoursLost"] == pytest.approx(36 / 3600, abs=1e-3)
    assert outcome.running_gpu_seconds == pytest.approx(1316)
    assert m["gpuHoursDelivered"] == pytest.approx(1316 / 3600, abs=1e-3)
    # Waits: BIG 0, SMALL 0 then 20, HIGH 0 (it evicted on arrival). 4 GPUs evicted for 1 high-priority gang.
    assert (m["waitMeanSeconds"], m["highPriorityWaitMeanSeconds"], m["gpusEvictedPerHighPriorityGang"]) == (
        pytest.approx(20 / 3, abs=0.1),
        0.0,
        4.0,
    )


def test_a_gang_that_can_spare_pods_above_its_minimum_runs_on_without_them() -> None:
    # T: 3 pods × 4 GPUs with minReplicas 2 fills the three nodes over [0, 100). HIGH (1 × 4) at 10 needs one
    # node: T's best-effort third pod goes, T keeps its two guaranteed pods and still ends at 100.
    gangs = [
        gang("t", arrival=0, duration=100, pods=3, gpus=4, min_replicas=2),
        gang("high", arrival=10, duration=20, pods=1, gpus=4, priority=10),
    ]
    outcome, m = _replay([host(f"n{i}", gpus=4) for i in range(3)], gangs, policy="cpsat")
    assert _runs(outcome) == {"t": (0, 100), "high": (10, 30)}
    t = outcome.runs[0]
    assert sorted(t.bound) == ["ns/t-0", "ns/t-1"] and t.evictions == 0
    assert (m["preemptions"], m["gpusEvicted"], m["gangsEvictedWhole"], m["gangsBroken"]) == (1, 4, 0, 0)
    # Nothing lost: the extra pod's 4 GPUs × 10 s were work done. T 12 × 10 + 8 × 90, HIGH 4 × 20: 920 GPU-s.
    assert m["gpuHoursLost"] == 0
    assert outcome.running_gpu_seconds == pytest.approx(920)
    assert m["gpuHoursDelivered"] == pytest.approx(920 / 3600, abs=1e-3)


def _two_cliques() -> tuple[list[HostSpec], list[ReplayGang]]:
    # Cliques c1 = {n0, n1}, c2 = {n2, n3} of 4-GPU nodes. U (1 pod, priority 0) on n0 and HI (1 pod, priority 10)
    # on n1 fill c1; BIG (2 pods, priority 0) fills c2. HIGH (priority 10, 2 × 4 GPUs) requires one clique. HI is
    # not below HIGH, so c1 can never be freed: the victim model evicts BIG (8 GPUs). The KAI-like greedy takes the
    # smallest gang first, U (useless: c1 stays half full), then BIG, and keeps both: 12 GPUs.
    hosts = [host(f"n{i}", gpus=4, clique=f"c{i // 2 + 1}") for i in range(4)]
    gangs = [
        gang("u", arrival=0, duration=100, pods=1, gpus=4),
        gang("hi", arrival=1, duration=100, pods=1, gpus=4, priority=10),
        gang("big", arrival=2, duration=100, pods=2, gpus=4),
        gang("high", arrival=10, duration=20, pods=2, gpus=4, priority=10, required=CLIQUE),
    ]
    return hosts, gangs


@pytest.mark.parametrize(("policy", "evicted"), [("cpsat", {"big"}), ("kai-greedy", {"u", "big"})])
def test_both_choosers_are_asked_on_the_same_state_and_only_the_runs_own_is_applied(
    policy: str, evicted: set[str]
) -> None:
    hosts, gangs = _two_cliques()
    outcome, m = _replay(hosts, gangs, policy=policy)
    (record,) = outcome.preemptions
    assert (record.at, record.gang, record.applied, record.started) == (10, "ns/high", policy, True)
    cpsat, greedy = record.choices["cpsat"], record.choices["kai-greedy"]
    assert (cpsat.gpus, cpsat.gangs, cpsat.highest_priority) == (8, 1, 0)
    assert (greedy.gpus, greedy.gangs, greedy.highest_priority) == (12, 2, 0)
    assert {run.gang.key.removeprefix("ns/") for run in outcome.runs if run.evictions} == evicted
    summary = m["preemptionComparison"]["summary"]
    assert (summary["cpsatFewer"], summary["equal"], summary["cpsatMore"]) == (1, 0, 0)
    assert m["preemptionComparison"]["decisions"][0]["kai-greedy"]["gpusEvicted"] == 12
    assert m["gpusEvicted"] == (8 if policy == "cpsat" else 12) and m["gangsBroken"] == 0


def _evict_one_guaranteed_pod(
    request: GangRequest,
    view: ClusterView,
    victims: Sequence[Victim],
    gangs: Mapping[str, VictimGang],
    options: SolveOptions | None = None,
) -> Preemption:
    """A broken chooser: takes one pod of the first victim gang, below its minReplicas, and places the preemptor
    on that pod's node."""
    first = victims[0]
    pod = request.groups[0].pods[0]
    cost = PreemptionCost(victim_priority=gangs[first.gang].priority, victim_gpus=4, victim_gangs=1, victim_pods=1)
    return Preemption(Status.PLACED, {pod: first.node}, (first.key,), cost=cost)


def _one_gang_of_two() -> tuple[list[HostSpec], list[ReplayGang]]:
    # T (2 pods × 4 GPUs, both guaranteed) fills two nodes; HIGH (1 × 4) arrives at 10.
    hosts = [host(f"n{i}", gpus=4) for i in range(2)]
    gangs = [
        gang("t", arrival=0, duration=100, pods=2, gpus=4),
        gang("high", arrival=10, duration=20, pods=1, gpus=4, priority=10),
    ]
    return hosts, gangs


def test_a_choice_the_validator_refuses_fails_the_replay() -> None:
    hosts, gangs = _one_gang_of_two()
    topology = Topology(hosts)
    choosers = {**CHOOSERS, "cpsat": _evict_one_guaranteed_pod}
    preemptor = Preemptor("cpsat", OPTIONS, topology, choosers=choosers)
    with pytest.raises(PreemptionViolation, match=r"cpsat's choice.*gang ns/t keeps 1 of group t-worker"):
        replay(workload(hosts, gangs), FirstFitGang(), horizon=50, preemptor=preemptor)


class _Unchecked(Preemptor):
    """A preemptor whose validator let a broken choice through: the engine must still see the broken gang."""

    def choose(
        self,
        request: GangRequest,
        free: Mapping[str, Mapping[str, int]],
        victims: Sequence[Victim],
        gangs: Mapping[str, VictimGang],
    ) -> tuple[Preemption, dict[str, Choice]]:
        _, choices = Preemptor(self.policy, self.options, self.topology).choose(request, free, victims, gangs)
        return _evict_one_guaranteed_pod(request, ClusterView(self.topology, free), victims, gangs), choices


def test_gangs_broken_is_read_from_the_ledger_not_from_the_choice() -> None:
    hosts, gangs = _one_gang_of_two()
    topology = Topology(hosts)
    outcome = replay(
        workload(hosts, gangs), FirstFitGang(), horizon=50, preemptor=_Unchecked("cpsat", OPTIONS, topology)
    )
    # T lost one of its two guaranteed pods and was left running on one: broken, whatever the choice claimed.
    assert outcome.broken == {"ns/t"}
    assert summarise(outcome, topology)["gangsBroken"] == 1
