"""The gang lifecycle against the kube-scheduler simulator: the scenarios of issue 9, each one a run on a simulated
clock (benchmarks/sim), with kube-scheduler's real pace, queue and backoff.

Times are simulated seconds. kube-scheduler feeds 80 pods/s here (what a v1.36 managed through this extender on
the issue's machines), so a gang of n pods needs n/80 s for every member to reach the extender once: that is one
"gathering window". kube-scheduler's longest backoff is 10 s.
"""

from __future__ import annotations

import pytest

from benchmarks.sim.fakeapi.inprocess import BindFault
from benchmarks.sim.simulation import GangSpec, Simulation, SimulationOutcome
from scheduler.extender.coordinator import CoordinatorConfig

PACE = 80.0
MAX_BACKOFF = 10.0


def _healthy(out: SimulationOutcome, gangs: int) -> None:
    assert out.overcommits == []
    assert out.partial_at_end == []
    assert len(out.whole_at) == gangs, f"{len(out.whole_at)} of {gangs} gangs whole; {out.summary()}"


def test_a_2400_pod_gang_binds_in_about_one_gathering_window() -> None:
    # The issue's cluster: 1,008 nodes × 4 GPUs; one gang of 2,400 one-GPU pods. With the bind barrier it never
    # bound (kube-scheduler cannot hold 2,400 bind calls open within its 5 s httpTimeout).
    sim = Simulation(nodes=1008, gpus_per_node=4, pods_per_second=PACE)
    sim.add_gang(GangSpec("big", {"w": (2400, 2400, 1)}))
    out = sim.run(until=600)
    _healthy(out, 1)
    # 2,400 / 80 = 30 s to offer every member once; the answer to the last one is at most one backoff away.
    assert out.whole_at["big"] <= 2400 / PACE + MAX_BACKOFF
    # Members answered Error while their gang gathered were bound by the extender, not by their own call.
    assert out.stats.bound_by_others > 0
    assert out.extender_binds == 2400


def test_two_cohorts_complete_within_one_backoff_and_one_gathering_window() -> None:
    # The livelock of the issue: 3 of 8 members reach bind, the other 5 only later. With the barrier each cohort
    # timed out on its own and backoff kept them apart; ready members now stay ready until the rest arrive.
    sim = Simulation(nodes=16, gpus_per_node=4, pods_per_second=PACE)
    sim.add_gang(GangSpec("tp-65", {"w": (8, 8, 1)}, late=frozenset({3, 4, 5, 6, 7}), late_at=5.0))
    out = sim.run(until=600)
    _healthy(out, 1)
    assert out.whole_at["tp-65"] <= 5.0 + MAX_BACKOFF + 8 / PACE


def test_a_restart_while_gangs_bind_completes_within_one_backoff_and_one_gathering_window() -> None:
    # The issue's disruption: 100 gangs × 8, the extender killed 3 s into binding and back 8 s later.
    sim = Simulation(nodes=252, gpus_per_node=4, pods_per_second=PACE)
    for g in range(100):
        sim.add_gang(GangSpec(f"tp-{g}", {"w": (8, 8, 1)}))
    sim.restart_extender(at=3.0, downtime=8.0)
    out = sim.run(until=900)
    _healthy(out, 100)
    assert out.lives == 2
    # Back at 11 s; every pod is then at most one backoff away, and 800 pods take 10 s to offer once.
    assert max(out.whole_at.values()) <= 11.0 + MAX_BACKOFF + 800 / PACE


def test_a_release_cut_by_a_crash_is_reported_and_repaired_after_the_restart() -> None:
    sim = Simulation(nodes=20, gpus_per_node=4, pods_per_second=PACE)
    sim.add_gang(GangSpec("g", {"w": (64, 64, 1)}))
    sim.restart_after_binds(20, downtime=40.0)  # SIGKILL after the 20th binding of the release
    out = sim.run(until=900)
    _healthy(out, 1)
    # It was partly bound (20 of 64) for the 40 s the extender was down and until the repair finished.
    assert out.partial_seconds["g"] >= 40.0
    assert out.partial_unreported == []
    reasons = [(e.type, e.reason) for e in sim.api.events]
    assert ("Warning", "PartiallyBound") in reasons and reasons[-1] == ("Normal", "Scheduled")
    conditions = sim.api.podgangs["default/g"].status.conditions  # type: ignore[union-attr]
    assert [(c.type, c.status) for c in conditions] == [("Scheduled", "True")]


def test_a_gang_whole_when_the_extender_died_gets_its_status_from_the_next_leader() -> None:
    # Found on a real control plane: killed right after a release's last binding, before the background worker wrote
    # Scheduled=True; the restarted extender synced before it held the Lease (this simulation now models that), so
    # the plans its sync queued were skipped and the whole gang never got its status.
    sim = Simulation(nodes=4, gpus_per_node=4, pods_per_second=PACE)
    sim.add_gang(GangSpec("g", {"w": (8, 8, 1)}))
    sim.add_gang(GangSpec("later", {"w": (2, 2, 1)}, at=10.0))  # keeps the run going well past the restart
    sim.restart_after_binds(8, downtime=2.0)
    out = sim.run(until=120)
    _healthy(out, 2)
    assert out.lives == 2
    conditions = sim.api.podgangs["default/g"].status.conditions  # type: ignore[union-attr]
    assert [(c.type, c.status) for c in conditions] == [("Scheduled", "True")]


@pytest.mark.parametrize(
    ("fault", "times"),
    [
        pytest.param("delete", 1, id="pod-deleted-404"),
        pytest.param("recreate", 2, id="uid-mismatch-409"),
        pytest.param("conflict", 3, id="conflict-409"),
        pytest.param("unavailable", 5, id="api-503"),
        pytest.param("timeout", 5, id="api-timeout"),
    ],
)
def test_a_bind_failure_in_a_release_ends_with_the_gang_whole(fault: BindFault, times: int) -> None:
    sim = Simulation(nodes=8, gpus_per_node=4, pods_per_second=PACE)
    sim.add_gang(GangSpec("f", {"w": (16, 16, 1)}))
    sim.fail_binds(sim.members("f")[:3], fault, times=times)
    out = sim.run(until=600)
    _healthy(out, 1)
    assert out.partial_seconds.get("f", 0) > 0, "three members failed: the gang was partly bound for a while"
    events = [(e.type, e.reason) for e in sim.api.events]
    assert events[-1] == ("Normal", "Scheduled")
    if fault in ("unavailable", "timeout"):
        # Five refusals in a row: retried 0.5 + 1 + 2 + 4 + 8 s apart, long enough to be reported meanwhile.
        assert ("Warning", "PartiallyBound") in events


def test_a_node_taken_by_another_scheduler_before_the_release_is_never_overcommitted() -> None:
    # 5 nodes × 4 GPUs = 20 GPUs, one gang of 16 one-GPU pods: once a pod of another scheduler takes a whole node
    # that holds planned members, exactly 16 GPUs are left, and the gang must move there, not overcommit. A slow
    # pace (10 pods/s: 1.6 s to offer all 16) leaves the intruder time to land while the gang gathers.
    sim = Simulation(nodes=5, gpus_per_node=4, pods_per_second=10)
    sim.add_gang(GangSpec("g", {"w": (16, 16, 1)}))
    sim.take_planned_node(at=0.6, member="default/g-w-0", gpus=4)
    out = sim.run(until=600)
    _healthy(out, 1)
    assert sim.intruded_on is not None
    on_that_node = [p for p in sim.api.pods.values() if p.spec.nodeName == sim.intruded_on]
    assert [p.metadata.name for p in on_that_node] == [f"intruder-{sim.intruded_on}"]


def test_a_gang_bigger_than_the_cluster_is_never_partly_bound() -> None:
    sim = Simulation(nodes=4, gpus_per_node=4, pods_per_second=PACE, config=CoordinatorConfig())
    sim.add_gang(GangSpec("huge", {"w": (17, 17, 1)}))  # 17 GPUs on 16
    out = sim.run(until=120)
    assert out.whole_at == {} and out.extender_binds == 0 and out.overcommits == []
    assert out.stats.filter_refusals > 0  # refused with the reason, parked by kube-scheduler


@pytest.mark.parametrize("batch_size", [1, 16])
def test_a_higher_priority_gang_that_arrives_second_gets_the_capacity_when_both_cannot_fit(batch_size: int) -> None:
    # 2 nodes × 4 GPUs = 8 GPUs, all held by "busy" (2 pods × 4 GPUs, priority 1000: nobody may evict it) until its
    # pods are deleted at 5 s. "low" (priority 0) arrives at 0.5 s, "high" (priority 100) at 4.5 s; each needs the
    # whole 8 GPUs, so only one can
    # start. The queue head planned together gives them to high and leaves low waiting with the reason. Planned one
    # gang at a time (batch size 1), low's pods are retried first (their backoff ends before high's), so low is
    # planned and binds first; then high, refused, evicts low whole and binds in its place.
    config = CoordinatorConfig(batch_size=batch_size)
    sim = Simulation(nodes=2, gpus_per_node=4, pods_per_second=PACE, config=config, regrow_deleted=None)
    sim.add_gang(GangSpec("busy", {"w": (2, 2, 4)}, at=0.0, priority=1000))
    sim.add_gang(GangSpec("low", {"w": (2, 2, 4)}, at=0.5, fits=False))
    sim.add_gang(GangSpec("high", {"w": (2, 2, 4)}, at=4.5, priority=100))
    sim.at(5.0, lambda: [sim.api.delete_pod(key) for key in sim.members("busy")])
    seen: dict[str, dict[str, object]] = {}

    def look() -> None:
        coordinator = sim.extender.coordinator
        assert coordinator is not None
        seen.update({gang["gang"]: gang for gang in coordinator.debug_gangs()})

    sim.at(6.5, look)  # after high is whole (the run ends 2 s after that)
    out = sim.run(until=30)
    assert out.overcommits == []
    if batch_size == 1:
        assert set(out.whole_at) == {"busy", "low", "high"}
        assert sorted(sim.api.evictions) == sorted(sim.members("low"))  # low, whole, and nothing else
        assert out.whole_at["high"] <= 5.0 + 2 * MAX_BACKOFF
        return
    assert set(out.whole_at) == {"busy", "high"}
    # whole within a second of the capacity freeing; low is the one waiting, saying which gang took the capacity
    assert out.whole_at["high"] <= 6.0
    assert seen["default/low"]["state"] == "Waiting"
    assert "default/high" in str(seen["default/low"]["reason"])


def test_a_high_priority_gang_on_a_full_cluster_preempts_one_whole_lower_gang_and_nothing_is_left_broken() -> None:
    # 4 nodes × 4 GPUs, full: two low gangs (priority 0) of 2 × 4 GPUs each, bound from the start. "high" (priority
    # 100) of 2 × 4 GPUs arrives at 3 s: one low gang is evicted whole (2 pods), high binds whole within one backoff
    # of its arrival. Evicted pods are created again (as Grove does) and wait: they are lower, and high holds the room.
    sim = Simulation(nodes=4, gpus_per_node=4, pods_per_second=PACE)
    sim.add_gang(GangSpec("low-a", {"w": (2, 2, 4)}, at=0.0))
    sim.add_gang(GangSpec("low-b", {"w": (2, 2, 4)}, at=0.0))
    sim.add_gang(GangSpec("high", {"w": (2, 2, 4)}, at=3.0, priority=100))
    out = sim.run(until=60)
    assert out.overcommits == []
    assert set(out.whole_at) == {"low-a", "low-b", "high"}
    assert out.whole_at["high"] <= 3.0 + MAX_BACKOFF
    evicted = sim.api.evictions
    assert len(evicted) == 2 and len({key.rsplit("-w-", 1)[0] for key in evicted}) == 1, evicted
    # The gang that stayed was never touched; the one evicted is wholly pending again, never half-running.
    survivor = "low-b" if evicted[0].startswith("default/low-a") else "low-a"
    assert all(sim.api.pods[key].spec.nodeName for key in sim.members(survivor))
    victim = "low-a" if survivor == "low-b" else "low-b"
    assert not any(sim.api.pods[key].spec.nodeName for key in sim.members(victim) if key in sim.api.pods)
