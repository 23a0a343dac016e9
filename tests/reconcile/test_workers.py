"""``reconcile --workers``: distinct PodCliqueSets reconciled at once against an API server over HTTP, each made whole
exactly once, and what one PodCliqueSet costs in requests held to a count."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client

from api.grove import LABEL_PART_OF
from benchmarks.sim.fakeapi import FakeApiServer, running
from benchmarks.sim.fakeapi.server import GATE_SECONDS
from scheduler.kube.memory.resources import PODGANGS, PODS
from scheduler.reconcile.controller import PassOutcome, Reconciler
from scheduler.reconcile.memory_client import InMemoryApi
from scheduler.reconcile.rest_client import KubeApi
from tests.reconcile.examples import example
from tests.reconcile.settling import quiet, within


def _named(name: str) -> dict[str, Any]:
    document = example("multinode-aggregated")  # 8 pods, 2 PodGangs
    document["metadata"]["name"] = name
    return document


@contextmanager
def _reconciling(server: FakeApiServer, *, workers: int, timeout: float = 10.0) -> Iterator[None]:
    api = KubeApi(client.ApiClient(client.Configuration(host=server.url)), timeout=timeout)
    stop = threading.Event()
    threads = api.start_watches(stop)
    kwargs = {"stop": stop, "poll_seconds": 0.1, "resync_seconds": 600, "workers": workers}
    loop = threading.Thread(target=Reconciler(api).run, kwargs=kwargs, daemon=True)
    loop.start()
    try:
        yield
    finally:
        stop.set()
        for thread in [loop, *threads]:
            thread.join(timeout=60)


def _pods_by_set(server: FakeApiServer) -> Counter[str]:
    return Counter(pod["metadata"]["labels"].get(LABEL_PART_OF, "") for pod in server.objects(PODS))


def test_two_podcliquesets_are_reconciled_at_once() -> None:
    """Each PodCliqueSet's ServiceAccount create is held until both are asked for (passes read the informers, so a
    write is what each pass sends for sure): one worker would wait out the gate (a minute: the client's timeout is
    longer) before the second; two go through together and both are whole at once."""
    with running() as server, _reconciling(server, workers=2, timeout=GATE_SECONDS + 30):
        server.gate("POST", r"/serviceaccounts$", parties=2)
        server.apply(_named("together-a"))
        server.apply(_named("together-b"))
        within(GATE_SECONDS / 2, lambda: _pods_by_set(server) == Counter({"together-a": 8, "together-b": 8}))


def test_many_workers_make_each_podcliqueset_whole_once() -> None:
    names = [f"many-{index:02d}" for index in range(12)]
    with running() as server, _reconciling(server, workers=4):
        for name in names:
            server.apply(_named(name))
        within(60, lambda: _pods_by_set(server) == Counter(dict.fromkeys(names, 8)))
        quiet(server)
        assert _pods_by_set(server) == Counter(dict.fromkeys(names, 8)), "a pod was made twice or lost"
        gangs = Counter(g["metadata"]["labels"].get(LABEL_PART_OF) for g in server.objects(PODGANGS))
        assert gangs == Counter(dict.fromkeys(names, 2))


def _resource(path: str) -> str:
    """``/apis/grove.io/v1alpha1/namespaces/default/podcliques/x/status`` → ``podcliques/status``."""
    parts = path.strip("/").split("/")
    at = parts.index("namespaces") + 2 if "namespaces" in parts else len(parts) - 1
    rest = parts[at:]
    return rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")


WRITES_PER_PODCLIQUESET = {
    # what Grove's operator makes for one replica of two cliques in a scaling group of 2 (8 pods, 2 PodGangs)
    "POST serviceaccounts": 1, "POST roles": 1, "POST rolebindings": 1, "POST services": 1,
    "POST podcliquescalinggroups": 1, "POST podcliques": 4, "POST podgangs": 2, "POST pods": 8,
    "PATCH pods": 4,  # scheduling gates lifted once their PodGang exists
    "PATCH podgangs/status": 4, "PATCH podcliques/status": 4, "PATCH podcliquescalinggroups/status": 1,
    "PATCH podcliquesets/status": 1,
}  # fmt: skip
READS_PER_PODCLIQUESET: dict[str, int] = {}  # a pass reads the informers (scheduler/reconcile/cache.py), never HTTP


def test_one_podcliqueset_costs_the_requests_named_here() -> None:
    """Every request one PodCliqueSet of 8 pods in 2 gangs costs, from its creation until the reconciler is quiet
    (watches aside), exactly. A change that sends more must change these tables and say why."""
    with running() as server, _reconciling(server, workers=1):
        quiet(server, for_seconds=0.5)
        before = len(server.requests)
        server.apply(_named("counted"))
        within(30, lambda: _pods_by_set(server) == Counter({"counted": 8}))
        quiet(server)
        sent = Counter(
            f"{r.method} {_resource(r.path)}" for r in server.requests[before:] if r.query.get("watch") != "true"
        )
    reads = {request: count for request, count in sent.items() if request.startswith("GET ")}
    writes = {request: count for request, count in sent.items() if not request.startswith("GET ")}
    assert writes == WRITES_PER_PODCLIQUESET
    assert reads == READS_PER_PODCLIQUESET


def test_a_pass_that_never_ends_stops_the_liveness_heartbeat() -> None:
    """The loop ticks while it waits with no pass running; once a worker is stuck in a pass, nothing ticks, so the
    liveness probe (``/healthz``: a tick within five minutes) can restart the process."""
    api = InMemoryApi()
    api.apply(_named("stuck"))
    entered, release, stop = threading.Event(), threading.Event(), threading.Event()

    class Stuck(Reconciler):
        def reconcile(self, namespace: str, name: str) -> PassOutcome:
            entered.set()
            release.wait(30)
            return PassOutcome()

    ticks: list[float] = []
    kwargs = {
        "stop": stop,
        "poll_seconds": 0.05,
        "resync_seconds": 600,
        "workers": 1,
        "on_tick": lambda: ticks.append(time.monotonic()),
    }
    loop = threading.Thread(target=Stuck(api).run, kwargs=kwargs, daemon=True)
    loop.start()
    try:
        assert entered.wait(10)
        time.sleep(0.2)  # the pass in flight has been taken: the loop's own ticks have stopped
        before = len(ticks)
        time.sleep(0.5)  # ten polls
        assert len(ticks) == before, "the loop said it moved while its only pass was stuck"
        release.set()
        within(5, lambda: len(ticks) > before)
    finally:
        release.set()
        stop.set()
        loop.join(timeout=10)
