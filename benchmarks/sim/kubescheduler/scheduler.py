"""kube-scheduler with one profile and at most one extender, as the gang lifecycle and throughput see it
(``schedule_one.go``, ``eventhandlers.go``): one pod per scheduling cycle, binding cycles asynchronous.

A scheduling cycle pops the next pod, runs the in-tree filters (here: resources fit, against the cache of bound
and assumed pods, so the extender gets every feasible node's name), calls the extender's filter (and prioritize
when more than one node is left) or, with no extender, scores the nodes itself (LeastAllocated), assumes the pod
on the chosen node and starts its binding cycle. The binding cycle calls the extender's bind (or posts
``pods/binding`` itself) within ``http_timeout``; on success the pod stays assumed until the watch shows it bound,
on failure kube-scheduler forgets the assumed pod — which it treats as a bound pod deleted, a cluster event that
moves every parked pod — and backs the pod off, unless the watch already shows it bound (by someone else: here,
the extender's own release), in which case it leaves the queue.

One model for the simulator and the end-to-end bench, with two things injected: the clock (the running event
loop's: looptime's simulated one, or a real one; ``cycle_seconds`` is the pace, 0 for as fast as it goes) and the
transport (what it reads of the cluster, fed by its informer's events; how it reaches the extender, or binds without
one). ``benchmarks.sim.simulation`` runs it in process, ``standin`` over HTTP.

Faults on kube-scheduler's side of the wire (extender down, time-outs) all become ``Error``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from api.core import Pod
from api.extender import ExtenderBindingResult, ExtenderFilterResult, HostPriority
from benchmarks.sim.kubescheduler.cache import Cache, Demand
from benchmarks.sim.kubescheduler.queue import LEFTOVER_FLUSH_PERIOD, SchedulingQueue

__all__ = [
    "Binder",
    "Demand",
    "Extender",
    "ExtenderDown",
    "KubeScheduler",
    "Lister",
    "PodEvent",
    "PodInfo",
    "SchedulerStats",
]

SCHEDULER_NAME = "grove"
FIRST_ERRORS = 3  # reasons kept for a person to read (SchedulerStats.first_errors)

PodEvent = Literal["ADDED", "MODIFIED", "DELETED"]


class ExtenderDown(Exception):
    """The extender did not answer (connection refused or reset): kube-scheduler sees an error."""


@dataclass(frozen=True, slots=True)
class PodInfo:
    """A pod as kube-scheduler's informer holds it: what its queue, cache and calls read."""

    namespace: str
    name: str
    uid: str
    version: str  # metadata.resourceVersion: another version is a changed pod
    node: str  # spec.nodeName, "" while pending
    scheduler: str
    priority: int
    gated: bool
    terminal: bool  # Succeeded or Failed: it holds no room
    demand: Demand

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, pod: Pod, *, demand: Demand | None = None) -> PodInfo:
        """``demand``: the pod's requests when known already (they are parsed once per pod)."""
        meta, spec = pod.metadata, pod.spec
        return cls(
            namespace=meta.namespace,
            name=meta.name,
            uid=meta.uid,
            version=meta.resourceVersion,
            node=spec.nodeName,
            scheduler=spec.schedulerName,
            priority=spec.priority or 0,
            gated=pod.gated,
            terminal=pod.terminal,
            demand=demand if demand is not None else tuple(sorted(pod.requests().items())),
        )


class Lister(Protocol):
    """The informer's current view of a pod (None once deleted)."""

    def pod(self, key: str) -> PodInfo | None: ...


class Extender(Protocol):
    """kube-scheduler's calls to the extender; each may raise ``ExtenderDown``."""

    async def filter(self, pod: PodInfo, nodes: list[str]) -> ExtenderFilterResult: ...

    async def prioritize(self, pod: PodInfo, nodes: list[str]) -> Sequence[HostPriority]: ...

    async def bind(self, pod: PodInfo, node: str) -> ExtenderBindingResult: ...


class Binder(Protocol):
    """The default binder, with no extender to bind: ``pods/binding``; returns the API server's error, or ""."""

    async def bind(self, pod: PodInfo, node: str) -> str: ...


@dataclass
class SchedulerStats:
    cycles: int = 0
    filter_calls: int = 0
    filter_errors: int = 0  # Error answers: backoff, no binding cycle
    filter_refusals: int = 0  # FailedNodes answers: parked
    in_tree_refusals: int = 0
    bind_calls: int = 0
    bind_errors: int = 0
    bind_timeouts: int = 0
    moves: int = 0  # cluster events that moved parked pods
    bound_by_others: int = 0  # pods that left the queue because the watch showed them bound
    first_errors: list[str] = field(default_factory=list)  # why the first pods went back to the queue


class KubeScheduler:
    """``lister`` and the informer handlers (``node_changed``, ``pod_changed``, fed by whoever watches) are its
    view of the cluster; ``extender`` is called when set, else ``binder`` binds; ``on_bound`` hears of each of its
    pods once, when its binding succeeds or the watch shows it bound."""

    def __init__(
        self,
        *,
        lister: Lister,
        extender: Extender | None = None,
        binder: Binder | None = None,
        cycle_seconds: float = 1 / 80,  # ~80 pods/s through an extender, as measured on a real v1.36
        http_timeout: float = 5.0,
        queue: SchedulingQueue | None = None,
        on_bound: Callable[[str], None] | None = None,
    ) -> None:
        if extender is None and binder is None:
            raise ValueError("kube-scheduler needs an extender to call or a binder of its own")
        self.lister = lister
        self.extender = extender
        self.binder = binder
        self.cycle_seconds = cycle_seconds
        self.http_timeout = http_timeout
        self.queue = queue or SchedulingQueue()
        self.on_bound = on_bound
        self.stats = SchedulerStats()
        self.cache = Cache()
        self.blocked: dict[str, float] = {}  # pod → until when kube-scheduler's own filters refuse it
        self._bound: set[str] = set()
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped = False

    def start(self) -> None:
        """Run the scheduling loop (after the informer's first list went through the handlers)."""
        self._spawn(self._scheduling_loop())
        self._spawn(self._leftover_loop())

    def stop(self) -> None:
        self._stopped = True
        for task in list(self._tasks):
            task.cancel()

    # --- the informer ----------------------------------------------------------------------------------------------

    def node_changed(self, name: str, allocatable: dict[str, int]) -> None:
        """A node added or changed: a cluster event that may make parked pods fit."""
        self.cache.set_node(name, allocatable)
        self._move_all()

    def pod_changed(self, event_type: PodEvent, pod: PodInfo) -> None:
        key = pod.key
        if event_type == "DELETED" or (pod.node and pod.terminal):
            self.queue.remove(key)
            if self.cache.remove(key):
                self._move_all()  # a bound pod gone frees room: parked pods may fit now
            return
        if pod.node:
            if key in self.queue and self.queue.where(key) != "binding":
                self.stats.bound_by_others += 1
            self.queue.remove(key)
            self.cache.confirm(key, node=pod.node, demand=pod.demand)
            if pod.scheduler == SCHEDULER_NAME:
                self._seen_bound(key)
            return
        if pod.scheduler == SCHEDULER_NAME and not pod.gated and not pod.terminal and key not in self.queue:
            self.queue.add(key, uid=pod.uid, priority=pod.priority, now=self._now())
            self._wake.set()

    # --- the scheduling loop ---------------------------------------------------------------------------------------

    async def _scheduling_loop(self) -> None:
        while not self._stopped:
            key = self.queue.pop(self._now())
            if key is None:
                await self._idle()
                continue
            await asyncio.sleep(self.cycle_seconds)  # the cycle's own cost: one pod at a time
            await self._cycle(key)

    async def _idle(self) -> None:
        self._wake.clear()
        due = self.queue.next_backoff()
        timeout = None if due is None else max(1e-3, due - self._now())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    async def _cycle(self, key: str) -> None:
        pod = self.lister.pod(key)
        if self.queue.where(key) != "flight":
            return  # moved meanwhile (deleted, bound, or re-queued under a new incarnation)
        if pod is None or pod.node:
            self.queue.remove(key)
            return
        self.stats.cycles += 1
        names = self.cache.feasible(pod.demand)
        if self.blocked.get(key, 0.0) > self._now():
            names = []  # e.g. a volume not provisioned yet: no node passes kube-scheduler's own filters
        if not names:
            self.stats.in_tree_refusals += 1
            self._note(pod, "no node fits")
            self.queue.park(key, now=self._now())
            return
        node = await self._choose(pod, names) if self.extender is not None else self.cache.least_allocated(pod.demand)
        if node is None:
            return
        current = self.lister.pod(key)
        if key in self.cache or current is None or current.version != pod.version:
            self.queue.remove(key)  # bound or changed while the extender answered: nothing to assume
            return
        self.cache.assume(key, node=node, demand=pod.demand)
        self.queue.done(key)
        self._spawn(self._binding_cycle(pod, node))

    async def _choose(self, pod: PodInfo, names: list[str]) -> str | None:
        """The extender's filter (and prioritize, when more than one node is left); None: the pod is back in the
        queue, backing off after an error or parked after a refusal."""
        assert self.extender is not None
        try:
            self.stats.filter_calls += 1
            reply = await self.extender.filter(pod, names)
        except ExtenderDown:
            reply = ExtenderFilterResult(Error="extender unreachable")
        if reply.Error:
            self.stats.filter_errors += 1
            self._note(pod, reply.Error)
            self.queue.requeue_error(pod.key, uid=pod.uid, now=self._now())
            return None
        chosen = [name for name in reply.NodeNames or [] if self.cache.knows(name)]
        if not chosen:
            self.stats.filter_refusals += 1
            self._note(pod, next(iter(reply.FailedNodes.values()), "no node"))
            self.queue.park(pod.key, now=self._now())
            return None
        node = chosen[0]
        if len(chosen) > 1:
            try:
                scores = await self.extender.prioritize(pod, chosen)
                node = max(scores, key=lambda s: s.Score).Host if scores else node
            except ExtenderDown:
                pass  # prioritize errors are ignored
        return node

    async def _binding_cycle(self, pod: PodInfo, node: str) -> None:
        key = pod.key
        self.stats.bind_calls += 1
        try:
            async with asyncio.timeout(self.http_timeout):
                if self.extender is not None:
                    error = (await self.extender.bind(pod, node)).Error
                else:
                    assert self.binder is not None
                    error = await self.binder.bind(pod, node)
        except TimeoutError:
            self.stats.bind_timeouts += 1
            error = "timeout"
        except ExtenderDown:
            error = "extender unreachable"
        if not error:
            self._seen_bound(key)
            return  # bound: the watch confirms the assumed pod
        self.stats.bind_errors += 1
        self._note(pod, error)
        if self.cache.forget(key):
            self._move_all()  # forgetting an assumed pod counts as a bound pod deleted
        current = self.lister.pod(key)
        if current is None or current.node:
            self.queue.remove(key)  # deleted, or bound meanwhile (by the extender's release): not re-queued
            return
        self.queue.requeue_error(key, uid=pod.uid, now=self._now())
        self._wake.set()

    async def _leftover_loop(self) -> None:
        while not self._stopped:
            await asyncio.sleep(LEFTOVER_FLUSH_PERIOD)
            if self.queue.flush_leftover(self._now()):
                self._wake.set()

    # --- helpers ---------------------------------------------------------------------------------------------------

    def _move_all(self) -> None:
        if self.queue.move_all(now=self._now()):
            self.stats.moves += 1
            self._wake.set()

    def _seen_bound(self, key: str) -> None:
        if self.on_bound is not None and key not in self._bound:
            self._bound.add(key)
            self.on_bound(key)

    def _note(self, pod: PodInfo, reason: str) -> None:
        if len(self.stats.first_errors) < FIRST_ERRORS:
            self.stats.first_errors.append(f"{pod.key}: {reason}")

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()
