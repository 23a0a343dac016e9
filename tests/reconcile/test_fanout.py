"""A pass's pod creates and gate lifts go out together: ``Fanout`` alone, then a pass over HTTP whose creates and
lifts the fake API server holds until four are in flight at once (one at a time, they would wait out the gate)."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from kubernetes import client

from benchmarks.sim.fakeapi import PODS, running
from benchmarks.sim.fakeapi.server import GATE_SECONDS
from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.fanout import Fanout
from scheduler.reconcile.rest_client import KubeApi
from tests.reconcile.examples import example


def test_results_come_in_the_order_given_and_no_more_than_the_limit_run_at_once() -> None:
    fanout = Fanout(3)
    running_now, most = 0, 0
    lock, enough = threading.Lock(), threading.Barrier(3, timeout=30)

    def call(item: int) -> int:
        nonlocal running_now, most
        with lock:
            running_now += 1
            most = max(most, running_now)
        if item < 3:
            enough.wait()  # the first three meet: they ran at once
        with lock:
            running_now -= 1
        return item * 10

    assert fanout.map(call, list(range(9))) == [item * 10 for item in range(9)]
    assert most == 3
    fanout.close()


def test_the_first_error_is_raised_once_every_call_has_ended() -> None:
    fanout = Fanout(4)
    ended: list[int] = []

    def call(item: int) -> int:
        if item == 1:
            raise ValueError("refused")
        ended.append(item)
        return item

    with pytest.raises(ValueError, match="refused"):
        fanout.map(call, [0, 1, 2, 3, 4, 5])
    assert sorted(ended) == [0, 2, 3, 4, 5]
    fanout.close()


def test_one_at_a_time_runs_on_the_callers_thread() -> None:
    caller = threading.get_ident()
    assert Fanout(1).map(lambda _: threading.get_ident(), [1, 2]) == [caller, caller]
    with pytest.raises(ValueError, match="at least 1"):
        Fanout(0)


def _four_workers() -> dict[str, Any]:
    document = example("multinode-aggregated")
    worker = document["spec"]["template"]["cliques"][1]
    worker["spec"]["replicas"] = 4
    document["spec"]["template"]["cliques"] = [worker]
    document["spec"]["template"].pop("podCliqueScalingGroups", None)
    return document


def test_a_pass_creates_and_ungates_a_cliques_pods_together() -> None:
    with running() as server:
        server.gate("POST", r"/namespaces/default/pods$", parties=4)
        server.gate("PATCH", r"/namespaces/default/pods/[^/]+$", parties=4)
        api = KubeApi(client.ApiClient(client.Configuration(host=server.url)), timeout=GATE_SECONDS + 30)
        server.apply(_four_workers())
        fanout = Fanout(4)
        outcome = Reconciler(api, rng=random.Random(1), fanout=fanout).reconcile("default", "multinode-aggregated")
        fanout.close()
        pods = server.objects(PODS)
        assert outcome.errors == [] and len(pods) == 4
        assert all(not pod["spec"].get("schedulingGates") for pod in pods)
