"""kube-scheduler with one profile and one extender, as the gang lifecycle sees it (``schedule_one.go``,
``eventhandlers.go``): one pod per scheduling cycle at a set pace, binding cycles asynchronous.

A scheduling cycle pops the next pod, runs the in-tree filters (here: resources fit, against the cache of bound
and assumed pods, so the extender gets every feasible node's name), calls the extender's filter (and prioritize
when more than one node is left), assumes the pod on the chosen node and starts its binding cycle. The binding
cycle calls the extender's bind within ``http_timeout``; on success the pod stays assumed until the watch shows it
bound, on failure kube-scheduler forgets the assumed pod — which it treats as a bound pod deleted, a cluster event
that moves every parked pod — and backs the pod off, unless the watch already shows it bound (by someone else:
here, the extender's own release), in which case it leaves the queue.

Faults on kube-scheduler's side of the wire (extender down, time-outs) all become ``Error``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from api.core import Node, Pod
from api.extender import ExtenderArgs, ExtenderBindingArgs, ExtenderBindingResult, ExtenderFilterResult, PodRef
from tests.simkube.api import EventType, FakeApi, Kind
from tests.simkube.queue import LEFTOVER_FLUSH_PERIOD, SchedulingQueue

__all__ = ["ExtenderDown", "KubeScheduler", "SchedulerStats"]

SCHEDULER_NAME = "grove"


class ExtenderDown(Exception):
    """The extender did not answer (connection refused or reset): kube-scheduler sees an error."""


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


@dataclass
class _Cached:
    node: str
    demand: tuple[tuple[str, int], ...]
    assumed: bool


@dataclass
class KubeScheduler:
    api: FakeApi
    call_filter: Callable[[ExtenderArgs], Any]  # coroutine functions; may raise ExtenderDown
    call_bind: Callable[[ExtenderBindingArgs], Any]
    call_prioritize: Callable[[ExtenderArgs], Any]
    cycle_seconds: float = 1 / 80  # ~80 pods/s through an extender, as measured on a real v1.36
    http_timeout: float = 5.0
    stats: SchedulerStats = field(default_factory=SchedulerStats)
    queue: SchedulingQueue = field(default_factory=SchedulingQueue)
    _free: dict[str, dict[str, int]] = field(default_factory=dict)
    _cache: dict[str, _Cached] = field(default_factory=dict)
    _fit: dict[tuple[tuple[str, int], ...], dict[str, None]] = field(default_factory=dict)  # demand → nodes
    _demands: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _stopped: bool = False
    blocked: dict[str, float] = field(default_factory=dict)  # pod → until when kube-scheduler's own filters refuse it

    def start(self) -> None:
        self.api.watch(self._informer)
        for node in self.api.nodes.values():
            self._node(node)
        for pod in self.api.pods.values():
            self._pod("ADDED", pod)
        self._spawn(self._scheduling_loop())
        self._spawn(self._leftover_loop())

    def stop(self) -> None:
        self._stopped = True
        for task in list(self._tasks):
            task.cancel()

    # --- the informer ----------------------------------------------------------------------------------------------

    def _informer(self, kind: Kind, event_type: EventType, obj: Any) -> None:
        if kind == "Node":
            self._node(obj)
            self._move_all()
        elif kind == "Pod":
            self._pod(event_type, obj)

    def _node(self, node: Node) -> None:
        allocatable = node.allocatable()
        used = {r: 0 for r in allocatable}
        for cached in self._cache.values():
            if cached.node == node.name:
                for resource, amount in cached.demand:
                    used[resource] = used.get(resource, 0) + amount
        self._free[node.name] = {r: allocatable[r] - used.get(r, 0) for r in allocatable}
        self._refit(node.name)

    def _pod(self, event_type: EventType, pod: Pod) -> None:
        key = pod.key
        if event_type == "DELETED":
            self.queue.remove(key)
            cached = self._cache.pop(key, None)
            if cached is not None:
                self._take(cached, -1)
                self._move_all()  # a bound pod deleted frees room: parked pods may fit now
            return
        if pod.spec.nodeName:
            if key in self.queue and self.queue.where(key) != "binding":
                self.stats.bound_by_others += 1
            self.queue.remove(key)
            cached = self._cache.get(key)
            if cached is None:
                cached = _Cached(pod.spec.nodeName, self._demand(pod), assumed=False)
                self._cache[key] = cached
                self._take(cached, 1)
            elif cached.node != pod.spec.nodeName:
                self._take(cached, -1)
                cached.node = pod.spec.nodeName
                self._take(cached, 1)
            cached.assumed = False
            return
        if pod.spec.schedulerName == SCHEDULER_NAME and not pod.gated and not pod.terminal and key not in self.queue:
            self.queue.add(key, uid=pod.metadata.uid, priority=pod.spec.priority or 0, now=self._now())
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
        pod = self.api.pods.get(key)
        if self.queue.where(key) != "flight":
            return  # moved meanwhile (deleted, bound, or re-queued under a new incarnation)
        if pod is None or pod.spec.nodeName:
            self.queue.remove(key)
            return
        self.stats.cycles += 1
        demand = self._demand(pod)
        names = list(self._fit[demand] if demand in self._fit else self._fit_for(demand))
        if self.blocked.get(key, 0.0) > self._now():
            names = []  # e.g. a volume not provisioned yet: no node passes kube-scheduler's own filters
        if not names:
            self.stats.in_tree_refusals += 1
            self.queue.park(key, now=self._now())
            return
        try:
            self.stats.filter_calls += 1
            reply: ExtenderFilterResult = await self.call_filter(ExtenderArgs(Pod=PodRef.of(pod), NodeNames=names))
        except ExtenderDown:
            reply = ExtenderFilterResult(Error="extender unreachable")
        if reply.Error:
            self.stats.filter_errors += 1
            self.queue.requeue_error(key, uid=pod.metadata.uid, now=self._now())
            return
        chosen = [name for name in reply.NodeNames or [] if name in self._free]
        if not chosen:
            self.stats.filter_refusals += 1
            self.queue.park(key, now=self._now())
            return
        node = chosen[0]
        if len(chosen) > 1:
            try:
                scores = await self.call_prioritize(ExtenderArgs(Pod=PodRef.of(pod), NodeNames=chosen))
                node = max(scores, key=lambda s: s.Score).Host if scores else node
            except ExtenderDown:
                pass  # prioritize errors are ignored
        if key in self._cache or self.api.pods.get(key) is not pod:
            self.queue.remove(key)  # bound or changed while the extender answered: nothing to assume
            return
        cached = _Cached(node, demand, assumed=True)
        self._cache[key] = cached
        self._take(cached, 1)
        self.queue.done(key)
        self._spawn(self._binding_cycle(pod, node))

    async def _binding_cycle(self, pod: Pod, node: str) -> None:
        key = pod.key
        args = ExtenderBindingArgs(
            PodName=pod.metadata.name, PodNamespace=pod.metadata.namespace, PodUID=pod.metadata.uid, Node=node
        )
        self.stats.bind_calls += 1
        try:
            reply: ExtenderBindingResult = await asyncio.wait_for(self.call_bind(args), self.http_timeout)
            error = reply.Error
        except TimeoutError:
            self.stats.bind_timeouts += 1
            error = "timeout"
        except ExtenderDown:
            error = "extender unreachable"
        if not error:
            return  # bound: the watch confirms the assumed pod
        self.stats.bind_errors += 1
        cached = self._cache.get(key)
        if cached is not None and cached.assumed:
            del self._cache[key]
            self._take(cached, -1)
            self._move_all()  # forgetting an assumed pod counts as a bound pod deleted
        current = self.api.pods.get(key)
        if current is None or current.spec.nodeName:
            self.queue.remove(key)  # deleted, or bound meanwhile (by the extender's release): not re-queued
            return
        self.queue.requeue_error(key, uid=pod.metadata.uid, now=self._now())
        self._wake.set()

    async def _leftover_loop(self) -> None:
        while not self._stopped:
            await asyncio.sleep(LEFTOVER_FLUSH_PERIOD)
            if self.queue.flush_leftover(self._now()):
                self._wake.set()

    # --- the cache -------------------------------------------------------------------------------------------------

    def _move_all(self) -> None:
        if self.queue.move_all(now=self._now()):
            self.stats.moves += 1
            self._wake.set()

    def _demand(self, pod: Pod) -> tuple[tuple[str, int], ...]:
        demand = self._demands.get(pod.key)
        if demand is None:
            demand = tuple(sorted(pod.requests().items()))
            self._demands[pod.key] = demand
        return demand

    def _fit_for(self, demand: tuple[tuple[str, int], ...]) -> dict[str, None]:
        nodes = {name: None for name, free in self._free.items() if _fits(free, demand)}
        self._fit[demand] = nodes
        return nodes

    def _take(self, cached: _Cached, sign: int) -> None:
        free = self._free.get(cached.node)
        if free is None:
            return
        for resource, amount in cached.demand:
            free[resource] = free.get(resource, 0) - sign * amount
        self._refit(cached.node)

    def _refit(self, node: str) -> None:
        free = self._free[node]
        for demand, nodes in self._fit.items():
            if _fits(free, demand):
                nodes[node] = None
            else:
                nodes.pop(node, None)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()


def _fits(free: dict[str, int], demand: tuple[tuple[str, int], ...]) -> bool:
    return all(free.get(resource, 0) >= amount for resource, amount in demand)
