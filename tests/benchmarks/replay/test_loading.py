"""Reading a replay's workload from a snapshot: arrivals relative to the first gang, bound pods as background,
and clear refusals naming the PodGang and field."""

from __future__ import annotations

import pytest

from api.core import PriorityClass
from benchmarks.replay.loading import WorkloadError, load_workload
from scheduler.snapshot import DURATION_ANNOTATION, Snapshot
from tests.builders import make_node, make_pod, make_podgang


def _snapshot(*, duration: str = "600") -> Snapshot:
    nodes = [make_node("n1").gpus(8).obj(), make_node("n2").gpus(8).obj()]
    pods = [
        make_pod("late-0").gpus(4).gang("late").obj(),
        make_pod("early-0").gpus(2).gang("early").obj(),
        make_pod("early-1").gpus(2).gang("early").obj(),
        make_pod("running-0").gpus(8).gang("running").on("n2").obj(),
        make_pod("loose").gpus(1).on("n1").obj(),
    ]
    gangs = [
        make_podgang("late")
        .group("late-w", pods=["late-0"])
        .created("2026-01-01T01:00:30Z")
        .annotation(DURATION_ANNOTATION, "90.5")
        .obj(),
        make_podgang("early")
        .group("early-w", pods=["early-0", "early-1"])
        .created("2026-01-01T01:00:00Z")
        .annotation(DURATION_ANNOTATION, duration)
        .obj(),
        make_podgang("running").group("running-w", pods=["running-0"]).created("2026-01-01T00:00:00Z").obj(),
    ]
    return Snapshot(nodes=nodes, pods=pods, podgangs=gangs)


def test_gangs_arrive_relative_to_the_first_pending_one_and_bound_pods_are_background() -> None:
    workload, topology = load_workload(_snapshot())
    # The running gang (bound) is not replayed: the earliest *pending* gang arrives at t = 0, the other 30 s later.
    assert [(g.key, g.arrival, g.duration) for g in workload.gangs] == [
        ("default/early", 0.0, 600.0),
        ("default/late", 30.0, 90.5),
    ]
    assert {pod: node for pod, (node, _) in workload.background.items()} == {
        "default/running-0": "n2",
        "default/loose": "n1",
    }
    assert workload.gangs[0].guaranteed_gpus == 4
    assert set(topology.hosts) == {"n1", "n2"}


@pytest.mark.parametrize("duration", ["0", "-5", "soon", "inf", "1e400", "nan"])
def test_a_bad_duration_names_the_gang_and_the_annotation(duration: str) -> None:
    with pytest.raises(WorkloadError, match=rf"PodGang default/early: .*{DURATION_ANNOTATION}.*got '{duration}'"):
        load_workload(_snapshot(duration=duration))


def test_a_recorded_snapshot_without_durations_replays_with_the_default_and_is_refused_without_one() -> None:
    # make e2e: `grove-extender record` of a live cluster carries no duration annotation (nobody knows yet how long
    # its pending gangs will run), and bench refused every such snapshot.
    snapshot = _snapshot()
    for gang in snapshot.podgangs:
        gang.metadata.annotations.pop(DURATION_ANNOTATION, None)
    with pytest.raises(WorkloadError, match=r"PodGang default/late: .*got None; .*bench --duration SECONDS"):
        load_workload(snapshot)
    workload, _ = load_workload(snapshot, default_duration=3600.0)
    assert [(g.key, g.duration) for g in workload.gangs] == [("default/early", 3600.0), ("default/late", 3600.0)]


def test_a_best_effort_pod_not_created_yet_is_no_crash() -> None:
    # The PodGang names two pods, one of them guaranteed; g-1 (best-effort) does not exist yet. The translator
    # plans without it; reading the members must not fail on it either (it raised KeyError).
    pods = [make_pod("g-0").gpus(1).gang("g").obj()]
    podgang = (
        make_podgang("g")
        .group("g-w", pods=["g-0", "g-1"], min_replicas=1)
        .created("2026-01-01T00:00:00Z")
        .annotation(DURATION_ANNOTATION, "60")
        .obj()
    )
    workload, _ = load_workload(Snapshot(nodes=[make_node("n1").gpus(4).obj()], pods=pods, podgangs=[podgang]))
    (gang,) = workload.gangs
    assert [pod.key for pod in gang.pods] == ["default/g-0"]
    assert gang.request.groups[0].pods == ("default/g-0",)


def test_priority_and_preemption_policy_come_from_the_snapshots_priority_classes() -> None:
    classes = [
        PriorityClass.model_validate({"metadata": {"name": "inference"}, "value": 1000}),
        PriorityClass.model_validate({"metadata": {"name": "queued"}, "value": 500, "preemptionPolicy": "Never"}),
        PriorityClass.model_validate({"metadata": {"name": "training"}, "value": 100, "globalDefault": True}),
    ]
    pods = [make_pod(f"{name}-0").gpus(1).gang(name).obj() for name in ("inf", "queue", "plain")]
    gangs = [
        make_podgang(name)
        .group(f"{name}-w", pods=[f"{name}-0"])
        .created(f"2026-01-01T00:00:0{i}Z")
        .annotation(DURATION_ANNOTATION, "60")
        .priority_class(klass)
        .obj()
        for i, (name, klass) in enumerate((("inf", "inference"), ("queue", "queued"), ("plain", "")))
    ]
    snapshot = Snapshot(nodes=[make_node("n1").gpus(4).obj()], pods=pods, podgangs=gangs, priority_classes=classes)
    workload, _ = load_workload(snapshot)
    # inf names its class; queue's class never preempts; plain names none and takes the globalDefault class.
    assert [(g.key, g.priority, g.preempts) for g in workload.gangs] == [
        ("default/inf", 1000, True),
        ("default/queue", 500, False),
        ("default/plain", 100, True),
    ]
