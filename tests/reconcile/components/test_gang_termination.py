"""Gang termination (reference §7) with an injected clock, mirroring Grove's gang_termination_test.go (GT-1…GT-6)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.memory_client import InMemoryApi
from tests.reconcile.examples import example

NS = "default"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def _running(document: dict[str, Any]) -> tuple[InMemoryApi, Reconciler, Clock]:
    """The PodCliqueSet converged, every pod bound and Ready (the scheduler and kubelet's part), healthy."""
    clock = Clock()
    api = InMemoryApi(clock=clock)
    api.apply(document)
    rec = Reconciler(api, rng=random.Random(1), clock=clock)
    rec.converge()
    while pending := [p for p in api.of_kind("Pod") if not p["spec"].get("nodeName")]:
        for pod in pending:
            if not pod["spec"].get("schedulingGates"):
                api.bind_pod(NS, pod["metadata"]["name"], "node-a")
                api.set_pod_ready(NS, pod["metadata"]["name"])
        rec.converge()
    clock.advance(60)  # well past Grove's 5 s grace: healthy for a while
    rec.converge()
    return api, rec, clock


def _training() -> dict[str, Any]:
    document = example("training-scaled")  # standalone parameter-server and coordinator; group "workers" of 3
    document["spec"]["replicas"] = 1
    document["spec"]["template"]["terminationDelay"] = "10s"
    return document


def _pod(api: InMemoryApi, clique: str) -> dict[str, Any]:
    return next(p for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podclique"] == clique)


def _names(api: InMemoryApi) -> set[str]:
    return {p["metadata"]["name"] for p in api.of_kind("Pod")}


def test_breached_standalone_clique_recycles_the_whole_pcs_replica_after_termination_delay() -> None:
    # GT-1: a clique of the PCS replica below minAvailable for terminationDelay ⇒ every PodClique recreated.
    api, rec, clock = _running(_training())
    before = _names(api)
    api.remove("Pod", namespace=NS, name=_pod(api, "training-0-coordinator")["metadata"]["name"])
    rec.converge()  # replaced at once, but unscheduled: MinAvailableBreached=True from now
    coordinator = api.objects[("PodClique", NS, "training-0-coordinator")]
    breached = next(c for c in coordinator["status"]["conditions"] if c["type"] == "MinAvailableBreached")
    assert (breached["status"], breached["reason"]) == ("True", "ScheduledReplicasBelowMinAvailable")
    clock.advance(9)  # 9 s < 10 s: still waiting
    rec.converge()
    assert len(before & _names(api)) == len(before) - 1  # only the lost pod was replaced
    clock.advance(1)  # 10 s: due
    rec.converge()
    assert not before & _names(api)  # every pod of the replica is new
    assert len(_names(api)) == len(before)
    groups = api.of_kind("PodCliqueScalingGroup")
    marker = [c for g in groups for c in g["status"]["conditions"] if c["type"] == "GangTerminationInProgress"]
    assert [m["status"] for m in marker] == ["True"]  # the group is not recycled a second time for the same breach


def test_a_breached_pass_asks_to_come_back_when_the_delay_runs_out() -> None:
    # make e2e: with nothing else changing, a breached gang was recycled only at the loop's next resync (60 s), not
    # after terminationDelay; Grove requeues after the time left.
    api, rec, clock = _running(_training())
    api.remove("Pod", namespace=NS, name=_pod(api, "training-0-coordinator")["metadata"]["name"])
    rec.converge()
    clock.advance(4)
    outcome = rec.reconcile(NS, "training")
    assert outcome.requeue_after is not None and 5.0 <= outcome.requeue_after <= 6.0  # 10 s delay − 4 s, give or take
    clock.advance(outcome.requeue_after)
    assert not _going(api)
    assert rec.reconcile(NS, "training").requeue_after is None  # recycled now: nothing left waiting
    assert _going(api)  # the replica's PodCliques are being deleted (their finalizer holds them for the next pass)


def _going(api: InMemoryApi) -> list[str]:
    return [c["metadata"]["name"] for c in api.of_kind("PodClique") if c["metadata"].get("deletionTimestamp")]


def test_breach_that_heals_within_the_delay_recycles_nothing() -> None:
    # GT-3/GT-4: min still holds once the replacement runs.
    api, rec, clock = _running(_training())
    before = _names(api)
    lost = _pod(api, "training-0-coordinator")["metadata"]["name"]
    api.remove("Pod", namespace=NS, name=lost)
    rec.converge()
    clock.advance(5)
    replacement = _pod(api, "training-0-coordinator")["metadata"]["name"]
    api.bind_pod(NS, replacement, "node-b")
    api.set_pod_ready(NS, replacement)
    rec.converge()
    clock.advance(3600)
    rec.converge()
    assert _names(api) == (before - {lost}) | {replacement}


def test_breached_scaling_group_replica_alone_is_recycled() -> None:
    # GT-5: a group replica breached while the group keeps minAvailable healthy replicas ⇒ only that replica.
    api, rec, clock = _running(_training())
    before = _names(api)
    scaled = "training-0-workers-2-worker"  # group replica 2, a scaled gang: 4 workers, minAvailable 3
    for pod in [p for p in api.of_kind("Pod") if p["metadata"]["labels"]["grove.io/podclique"] == scaled][:2]:
        api.remove("Pod", namespace=NS, name=pod["metadata"]["name"])  # 2 of 4 lost: 2 < 3
    rec.converge()
    clock.advance(10)
    rec.converge()
    replica = "training-0-workers-2-"  # its PodCliques: worker (4 pods) and parameter-server (1)
    recycled = {n for n in _names(api) if n.startswith(replica)}
    assert _names(api) - recycled == {n for n in before if not n.startswith(replica)}  # nothing else touched
    assert len(recycled) == 5 and not recycled & before  # every pod of group replica 2 is new


def test_never_scheduled_gang_is_left_alone() -> None:
    # Grove's WasPCLQEverScheduled: recycling pods a full cluster cannot place would only churn.
    clock = Clock()
    api = InMemoryApi(clock=clock)
    api.apply(_training())
    rec = Reconciler(api, rng=random.Random(1), clock=clock)
    rec.converge()
    before = _names(api)
    clock.advance(3600)
    rec.converge()
    assert _names(api) == before
    coordinator = api.objects[("PodClique", NS, "training-0-coordinator")]
    assert {c["type"]: c["status"] for c in coordinator["status"]["conditions"]} == {
        "PodCliqueScheduled": "False",
        "MinAvailableBreached": "True",
    }
