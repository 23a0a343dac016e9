"""The extender as a process of the simulation: ``Coordinator`` + its store fed by the fake API's watch + the
background worker, all on the simulation's clock, with plans run inline (no threads: a thread's real time would
not be the simulation's).

``kill`` is a SIGKILL: every task the process started is cancelled, its writes are refused from that instant
(a release is cut mid-way), calls in flight fail, and nothing of its memory survives. ``start`` again is a new
process that knows only what it lists from the API, and that leads only ``lease_delay`` seconds after it listed:
a real one syncs its watches before its elector's first step takes the Lease (about a second, make e2e). The
first start leads at once: in a cluster the extender is up long before the scenario's gangs arrive.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, TypeVar

from api.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    HostPriority,
    PodRef,
)
from benchmarks.sim.fakeapi.inprocess import FakeApi, Subscription
from benchmarks.sim.kubescheduler.scheduler import ExtenderDown, PodInfo
from placement import solve
from scheduler.extender.coordinator import BackgroundWorker, Coordinator, CoordinatorConfig
from scheduler.extender.state import ClusterStore
from scheduler.kube.errors import WriteError
from scheduler.kube.nominations import Nominated, Nomination, NotSent, Wanted

__all__ = ["ExtenderProcess", "install_task_owner"]

T = TypeVar("T")

_owner: contextvars.ContextVar[ExtenderProcess | None] = contextvars.ContextVar("simkube_owner", default=None)


def install_task_owner(loop: asyncio.AbstractEventLoop) -> None:
    """Every task created while a process is running code belongs to that process (so ``kill`` finds them)."""

    def factory(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kwargs: Any) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **kwargs)
        owner = _owner.get()
        if owner is not None:
            owner._tasks.add(task)
            task.add_done_callback(owner._tasks.discard)
        return task

    loop.set_task_factory(factory)  # type: ignore[arg-type]


async def _inline(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return call(*args, **kwargs)


class _Writer:
    """The process's ``ClusterWriter``: the fake API, until the process dies."""

    inline = True

    def __init__(self, process: ExtenderProcess) -> None:
        self._process = process

    def _api(self) -> FakeApi:
        if not self._process.up:
            raise WriteError("connection lost: the extender process is gone")
        return self._process.api

    async def bind(self, *, namespace: str, name: str, uid: str, node: str) -> None:
        self._api().bind(namespace=namespace, name=name, uid=uid, node=node)

    def patch_podgang_status(self, *, namespace: str, name: str, status: dict[str, Any]) -> None:
        self._api().patch_podgang_status(namespace=namespace, name=name, status=status)

    def nominate(self, nominations: Sequence[Nomination], done: Nominated, *, wanted: Wanted = lambda _: True) -> None:
        for nomination in nominations:
            if not wanted(nomination):
                done(nomination, NotSent(nomination))
                continue
            try:
                self._api().nominate(nomination)
            except WriteError as err:
                done(nomination, err)
            else:
                done(nomination, None)

    def evict(self, *, namespace: str, name: str, uid: str, dry_run: bool = False) -> None:
        self._api().evict(namespace=namespace, name=name, uid=uid, dry_run=dry_run)

    def record_event(self, *, namespace: str, kind: str, name: str, uid: str, reason: str, message: str,
                     type: Literal["Normal", "Warning"] = "Normal") -> None:  # fmt: skip
        self._api().record_event(namespace=namespace, kind=kind, name=name, uid=uid, reason=reason, message=message,
                                 type=type)  # fmt: skip


class _Lease:
    """Leadership from ``since`` on (the simulation's clock): the Lease taken after the first sync."""

    def __init__(self, loop: asyncio.AbstractEventLoop, since: float) -> None:
        self._loop = loop
        self._since = since

    def is_leader(self) -> bool:
        return self._loop.time() >= self._since


class ExtenderProcess:
    def __init__(
        self, api: FakeApi, *, config: CoordinatorConfig, watch_lag: float = 0.02, lease_delay: float = 1.0
    ) -> None:
        self.api = api
        self.config = config
        self.watch_lag = watch_lag
        self.lease_delay = lease_delay
        self.up = False
        self.lives = 0
        self.coordinator: Coordinator | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._subscription: Subscription | None = None
        self._worker: asyncio.Task[None] | None = None

    def start(self) -> None:
        """A new process: list everything from the API, then follow its watch."""
        token = _owner.set(self)
        try:
            loop = asyncio.get_running_loop()
            store = ClusterStore()
            coordinator = Coordinator(
                store=store,
                writer=_Writer(self),
                solver=solve,
                config=self.config,
                leadership=_Lease(loop, loop.time() + (self.lease_delay if self.lives else 0.0)),
                clock=loop.time,
                timer=asyncio.sleep,
                blocking=_inline,
            )
            store.replace("Node", list(self.api.nodes.values()))
            store.replace("Pod", list(self.api.pods.values()))
            store.replace("PodGang", list(self.api.podgangs.values()))
            store.mark_synced()
            self._subscription = self.api.watch(store.apply, lag=self.watch_lag)
            self.coordinator = coordinator
            self.up = True
            self.lives += 1
            self._worker = asyncio.ensure_future(self._background(BackgroundWorker(coordinator)))
        finally:
            _owner.reset(token)

    def kill(self) -> None:
        self.up = False
        if self._subscription is not None:
            self.api.unwatch(self._subscription)
        for task in list(self._tasks):
            task.cancel()
        self.coordinator = None

    # --- kube-scheduler's calls (``benchmarks.sim.kubescheduler.scheduler.Extender``), in process ---------------

    async def filter(self, pod: PodInfo, nodes: list[str]) -> ExtenderFilterResult:
        args = ExtenderArgs(Pod=_ref(pod), NodeNames=nodes)
        return await self._call(lambda c: c.filter(args))

    async def prioritize(self, pod: PodInfo, nodes: list[str]) -> Sequence[HostPriority]:
        args = ExtenderArgs(Pod=_ref(pod), NodeNames=nodes)
        return await self._call(lambda c: c.prioritize(args))

    async def bind(self, pod: PodInfo, node: str) -> ExtenderBindingResult:
        args = ExtenderBindingArgs(PodName=pod.name, PodNamespace=pod.namespace, PodUID=pod.uid, Node=node)
        return await self._call(lambda c: c.bind(args))

    async def _call(self, verb: Callable[[Coordinator], Awaitable[T]]) -> T:
        coordinator = self.coordinator
        if not self.up or coordinator is None:
            raise ExtenderDown("connection refused")
        token = _owner.set(self)
        try:
            task = asyncio.ensure_future(verb(coordinator))
        finally:
            _owner.reset(token)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():  # the process died under the call: the connection was reset
                raise ExtenderDown("connection reset") from None
            raise

    async def _background(self, worker: BackgroundWorker) -> None:
        while True:
            worker.run_once()
            await asyncio.sleep(1.0)


def _ref(pod: PodInfo) -> PodRef:
    return PodRef.model_validate({"metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}})
