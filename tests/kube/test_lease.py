"""Lease election against the fake API server, with fake clocks: one leader at a time, take-over, release."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes.client import ApiClient

from benchmarks.sim.fakeapi import LEASES, FakeApiServer
from benchmarks.sim.fakeapi.server import GATE_SECONDS
from scheduler.kube.lease import LeaseElector, LeaseTiming

LEASE_PATH = r"^/apis/coordination.k8s.io/v1/namespaces/grove/leases/grove-extender$"


class Clock:
    """One fake monotonic clock and the matching wall clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> datetime:
        return datetime(2026, 11, 25, tzinfo=UTC) + timedelta(seconds=self.now)


def elector(api_client: ApiClient, identity: str, clock: Clock, timing: LeaseTiming | None = None) -> LeaseElector:
    return LeaseElector(
        api_client,
        namespace="grove",
        identity=identity,
        timing=timing,
        clock=clock.monotonic,
        wall=clock.wall,
        # A read held at a gate waits for the other candidate's thread; on a loaded machine that can take seconds,
        # and a client time-out there would turn the race into a failed attempt.
        request_timeout=(GATE_SECONDS, GATE_SECONDS),
    )


def holder(fake: FakeApiServer) -> tuple[str, int]:
    lease = fake.get(LEASES, "grove-extender", "grove")
    assert lease is not None
    return lease["spec"].get("holderIdentity", ""), lease["spec"].get("leaseTransitions", 0)


def test_first_candidate_creates_the_lease_and_leads(fake: FakeApiServer, api_client: ApiClient) -> None:
    clock = Clock()
    a, b = elector(api_client, "a", clock), elector(api_client, "b", clock)
    assert a.step() and a.is_leader()
    assert not b.step() and not b.is_leader()
    assert holder(fake) == ("a", 0)
    lease = fake.get(LEASES, "grove-extender", "grove")
    assert lease is not None
    assert lease["spec"]["leaseDurationSeconds"] == 15
    assert lease["spec"]["renewTime"].endswith("+00:00") and "." in lease["spec"]["renewTime"]


def test_standby_takes_over_only_after_the_lease_expires(fake: FakeApiServer, api_client: ApiClient) -> None:
    clock = Clock()
    a, b = elector(api_client, "a", clock), elector(api_client, "b", clock)
    a.step()
    # a renews every 2 s for a while; b keeps seeing fresh renewals and stays standby
    for _ in range(5):
        clock.now += 2
        assert a.step()
        assert not b.step()
    # a dies (stops renewing); b retries every 2 s
    leaders_seen = []
    for _ in range(10):
        clock.now += 2
        b.step()
        assert not (a.is_leader() and b.is_leader()), "two leaders at once"
        leaders_seen.append((a.is_leader(), b.is_leader()))
    assert b.is_leader() and not a.is_leader()
    assert holder(fake) == ("b", 1)
    # a stepped down (10 s renew deadline) strictly before b took over (15 s lease duration)
    first_b = next(i for i, (_, lb) in enumerate(leaders_seen) if lb)
    last_a = max((i for i, (la, _) in enumerate(leaders_seen) if la), default=-1)
    assert last_a < first_b - 1


def test_a_leader_that_cannot_renew_steps_down(fake: FakeApiServer, api_client: ApiClient) -> None:
    clock = Clock()
    a = elector(api_client, "a", clock)
    assert a.step()
    fake.fail("GET", LEASE_PATH, 503, reason="ServiceUnavailable", times=100)
    clock.now += 9
    assert a.step() and a.is_leader(), "a failed renewal within the renew deadline keeps leadership"
    clock.now += 1
    assert not a.is_leader(), "a leader past its renew deadline must not act, even before its thread notices"
    assert not a.step()


def test_racing_candidates_one_wins_by_resource_version(fake: FakeApiServer, api_client: ApiClient) -> None:
    clock = Clock()
    old = elector(api_client, "old", clock)
    old.step()
    clock.now += 100  # the old leader is long gone
    a, b = elector(api_client, "a", clock), elector(api_client, "b", clock)
    # both must have seen the record before it can count as expired on their own clocks
    a.step(), b.step()
    clock.now += 16
    fake.gate("GET", LEASE_PATH, parties=2)  # both read the same resourceVersion before either writes
    results: dict[str, bool] = {}
    threads = [threading.Thread(target=lambda e=e: results.update({e.identity: e.step()})) for e in (a, b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=2 * GATE_SECONDS)
    assert sorted(results.values()) == [False, True]
    winner = next(name for name, won in results.items() if won)
    assert holder(fake) == (winner, 1)
    assert len(fake.requests_to("PUT", LEASE_PATH)) >= 2, "both tried; the loser got 409 Conflict"


def test_stop_releases_the_lease_for_an_immediate_take_over(fake: FakeApiServer, api_client: ApiClient) -> None:
    # Real time here: durations far beyond any stall of a loaded machine, so a keeps leading until it stops, and
    # b can only take over at once because a released the lease.
    timing = LeaseTiming(lease_duration=300.0, renew_deadline=200.0, retry_period=0.05)
    a = LeaseElector(api_client, namespace="grove", identity="a", timing=timing)
    stop = threading.Event()
    thread = a.start(stop)
    deadline = time.monotonic() + GATE_SECONDS  # waiting for something that will happen: generous
    while not a.is_leader():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    stop.set()
    thread.join(timeout=GATE_SECONDS)
    assert not a.is_leader()
    assert holder(fake)[0] == ""
    b = LeaseElector(api_client, namespace="grove", identity="b", timing=timing)
    assert b.step(), "a released lease is free at once"


def test_timing_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        LeaseTiming(lease_duration=10, renew_deadline=10, retry_period=2)
