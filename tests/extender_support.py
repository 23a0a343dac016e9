"""Helpers for the extender tests: a small cluster builder, an app over a store, and an async HTTP client.

Plans go through the real ``placement.solve``: these tests check the coordinator's rules (pinning, ready members,
the release, reservations, re-plans) on whatever placement it returns, never a particular objective value.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from starlette.types import ASGIApp

from api.core import Node, Pod, PriorityClass
from api.grove import GANG_GATE, PodGang
from api.http.app import create_app
from placement import solve
from scheduler.extender.cluster_writer import InMemoryClusterWriter
from scheduler.extender.coordinator import BackgroundWorker, Coordinator, CoordinatorConfig, Solver
from scheduler.extender.leadership import Leadership
from scheduler.extender.state import ClusterStore, load_snapshot_into
from scheduler.snapshot import Snapshot

T = TypeVar("T")

CLIQUE = "nvidia.com/gpu.clique"
GPU = "nvidia.com/gpu"


# --- builders --------------------------------------------------------------------------------------------------


def node(name: str, *, gpus: int = 8, cpu: str = "96", clique: str | None = None, **labels: str) -> Node:
    all_labels = {"kubernetes.io/hostname": name, **labels}
    if clique:
        all_labels[CLIQUE] = clique
    return Node.model_validate(
        {
            "metadata": {"name": name, "labels": all_labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "1000Gi", "pods": "110", GPU: str(gpus)}},
        }
    )


def pod(
    name: str,
    *,
    gang: str | None = None,
    gpus: int = 0,
    cpu: str = "1",
    node_name: str = "",
    gated: bool | str = False,  # True: Grove's gate; a name: that gate
    namespace: str = "default",
    phase: str = "Pending",
) -> Pod:
    requests: dict[str, str] = {"cpu": cpu}
    if gpus:
        requests[GPU] = str(gpus)
    return Pod.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{namespace}-{name}",
                "labels": {"grove.io/podgang": gang} if gang else {},
            },
            "spec": {
                "schedulerName": "grove",
                "nodeName": node_name,
                "containers": [{"name": "c", "resources": {"requests": requests}}],
                "schedulingGates": [{"name": gated if isinstance(gated, str) else GANG_GATE}] if gated else [],
            },
            "status": {"phase": phase},
        }
    )


def podgang(
    name: str,
    groups: Mapping[str, tuple[list[str], int]],
    *,
    required: str | None = None,
    namespace: str = "default",
) -> PodGang:
    spec: dict[str, Any] = {
        "podgroups": [
            {
                "name": group,
                "minReplicas": minimum,
                "podReferences": [{"namespace": namespace, "name": p} for p in pods],
            }
            for group, (pods, minimum) in groups.items()
        ]
    }
    if required:
        spec["topologyConstraint"] = {"packConstraint": {"required": required}}
    return PodGang.model_validate({"metadata": {"name": name, "namespace": namespace}, "spec": spec})


def gang(
    name: str, *, workers: int, gpus: int, min_replicas: int | None = None, required: str | None = None
) -> tuple[list[Pod], PodGang]:
    """A gang of one group ``worker`` with ``workers`` pods of ``gpus`` GPUs each."""
    names = [f"{name}-w{i}" for i in range(workers)]
    pods = [pod(n, gang=name, gpus=gpus) for n in names]
    minimum = workers if min_replicas is None else min_replicas
    return pods, podgang(name, {"worker": (names, minimum)}, required=required)


# --- the system under test -------------------------------------------------------------------------------------


class FakeClock:
    """The coordinator's monotonic clock, moved by hand. Its ``sleep`` is the coordinator's timer in harnesses built
    with ``fake_time=True``: a bind call's wait then ends when the test ``advance``s past its deadline, never because
    the machine was slow."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps_started = 0
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        wake = asyncio.get_running_loop().create_future()
        entry = (self.now + seconds, wake)
        self._sleepers.append(entry)
        self.sleeps_started += 1
        try:
            await wake
        finally:
            self._sleepers = [s for s in self._sleepers if s[1] is not wake]

    def sleeping(self) -> int:
        return len(self._sleepers)

    def advance(self, seconds: float) -> None:
        """Move time on and wake every sleeper whose deadline has come."""
        self.now += seconds
        for deadline, wake in self._sleepers:
            if deadline <= self.now and not wake.done():
                wake.set_result(None)

    async def until_sleeping(self, count: int) -> None:
        """Wait (on real time, generously: it is waiting for something that will happen) until ``count`` sleepers
        are parked, e.g. bind calls waiting for their gang. Plans may be solved in worker threads, hence not just
        yielding."""
        deadline = time.monotonic() + PATIENCE_SECONDS
        while len(self._sleepers) < count:
            assert time.monotonic() < deadline, f"{len(self._sleepers)} of {count} sleepers after {PATIENCE_SECONDS}s"
            await asyncio.sleep(0.005)


PATIENCE_SECONDS = 60.0
"""How long a test waits for something that must happen: long, so load on the machine never fails a test; a
test that reaches it has hung, not lost a race."""


@dataclass
class Harness:
    store: ClusterStore
    writer: InMemoryClusterWriter
    coordinator: Coordinator
    app: ASGIApp
    clock: FakeClock = field(default_factory=FakeClock)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://extender")

    def background(self) -> int:
        """Do what the background worker thread would do now (plans ahead, PodGang status, expiry)."""
        return BackgroundWorker(self.coordinator).run_once()

    def settle(self) -> None:
        """Run the background worker until it has nothing left to do: a tick may queue work (the first finds the
        store synced and queues every PodGang, a plan queues its nominations), so two idle turns in a row end it."""
        idle = 0
        for _ in range(50):
            idle = 0 if self.background() else idle + 1
            if idle == 2:
                return
        raise AssertionError("the background worker never ran out of work")


def harness(
    *,
    nodes: Iterable[Node],
    pods: Iterable[Pod] = (),
    podgangs: Iterable[PodGang] = (),
    priority_classes: Iterable[PriorityClass] = (),
    bind_wait: float = 2.0,
    fake_time: bool = False,
    solver: Solver | None = None,
    store: ClusterStore | None = None,
    leadership: Leadership | None = None,
    batch_size: int = CoordinatorConfig.batch_size,
    nominate: bool = True,
    writer_type: Callable[[ClusterStore], InMemoryClusterWriter] = InMemoryClusterWriter,
) -> Harness:
    if store is None:
        store = ClusterStore()
        snapshot = Snapshot(
            nodes=list(nodes), pods=list(pods), podgangs=list(podgangs), priority_classes=list(priority_classes)
        )
        load_snapshot_into(store, snapshot)
    writer = writer_type(store)
    clock = FakeClock()
    coordinator = Coordinator(
        store=store,
        writer=writer,
        solver=solver or solve,
        config=CoordinatorConfig(bind_wait_seconds=bind_wait, batch_size=batch_size, nominate=nominate),
        leadership=leadership,
        clock=clock,
        # Real time by default: fuzz and property tests only need a wait that eventually ends.
        timer=clock.sleep if fake_time else asyncio.sleep,
    )
    app = create_app(coordinator, registry=coordinator.registry)
    return Harness(store=store, writer=writer, coordinator=coordinator, app=app, clock=clock)


def run(main: Callable[[], Awaitable[T]]) -> T:
    """Run a test's coroutine; one that hangs (a bind call nobody answers) fails instead."""

    async def bounded() -> T:
        return await asyncio.wait_for(main(), PATIENCE_SECONDS)

    return asyncio.run(bounded())


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait for something that must happen (e.g. a status written in the background), generously."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not after {PATIENCE_SECONDS}s"
        await asyncio.sleep(0.005)


def filter_body(p: Pod, names: Iterable[str]) -> dict[str, Any]:
    return {"Pod": p.model_dump(mode="json"), "Nodes": None, "NodeNames": list(names)}


def bind_body(p: Pod, node_name: str) -> dict[str, Any]:
    return {
        "PodName": p.metadata.name,
        "PodNamespace": p.metadata.namespace,
        "PodUID": p.metadata.uid,
        "Node": node_name,
    }


async def filter_one(client: httpx.AsyncClient, p: Pod, names: Iterable[str]) -> dict[str, Any]:
    reply = await client.post("/filter", json=filter_body(p, names))
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def assert_no_overcommit(store: ClusterStore) -> None:
    """Every node: bound pods' requests within allocatable, for every resource."""
    for n in store.nodes():
        used = store.used_on(n.name)
        allocatable = n.allocatable()
        for resource, units in used.items():
            assert units <= allocatable.get(resource, 0), f"{n.name} overcommitted on {resource}: {units}"


class SyncClient:
    """A blocking client over an ASGI app, one event loop per call (starlette's TestClient wants ``httpx2``)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async def call() -> httpx.Response:
            transport = httpx.ASGITransport(app=self._app)
            async with httpx.AsyncClient(transport=transport, base_url="http://extender") as client:
                return await client.request(method, path, **kwargs)

        return asyncio.run(call())

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def get(self, path: str) -> httpx.Response:
        return self.request("GET", path)
