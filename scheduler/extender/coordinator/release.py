"""The release: once a gang's guarantee is met, the extender binds its ready members itself.

kube-scheduler binds one pod per call and cannot hold a gang's calls open long enough for a large gang, so the
extender completes the gang: it POSTs ``pods/binding`` for every ready member, including members whose own bind
call was already answered and which sit in kube-scheduler's backoff (kube-scheduler sees them bound and drops them
from its queue). Kubernetes has no multi-pod atomic bind, so a pass can leave a gang partly bound; it is never left
so silently:

- a bind refused for a passing reason (API errors, time-outs, conflicts) is retried with backoff while the pod
  exists with the same UID, is unbound and its node still has room (``GangTable.release_started`` checks);
- a member that is gone (404) loses its place and the gang re-plans that group around the bound members;
- meanwhile the gang is PartiallyBound (condition, event, metric: ``reporting``) until it is whole again.

One release runs per gang at a time, on the event loop; members that become ready while it runs are taken by its
next pass.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from scheduler.extender.cluster_writer import ClusterWriter
from scheduler.extender.coordinator.gang_state import PodFacts, ReadyMember
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangRef
from scheduler.extender.coordinator.metrics import CoordinatorMetrics
from scheduler.extender.coordinator.waiters import BindWaiters, Timer
from scheduler.extender.state.store import ClusterStore
from scheduler.kube.errors import WriteError

__all__ = ["Releaser", "RetryPolicy"]

log = logging.getLogger(__name__)

_CONCURRENT_BINDS = 16  # per release: enough to bind thousands in seconds without flooding the API server
_YIELD_EVERY = 32  # in-memory binds run on the loop: let filters (kube-scheduler's critical path) in between


class _Kind(StrEnum):
    BOUND = "bound"
    GONE = "gone"
    RETRY = "retry"


@dataclass(frozen=True)
class _Outcome:
    kind: _Kind
    message: str = ""


@dataclass(frozen=True)
class RetryPolicy:
    first_seconds: float = 0.5
    max_seconds: float = 10.0

    def delay(self, attempt: int) -> float:
        return float(min(self.max_seconds, self.first_seconds * 2**attempt))


class Releaser:
    def __init__(
        self,
        *,
        store: ClusterStore,
        table: GangTable,
        writer: ClusterWriter,
        waiters: BindWaiters,
        metrics: CoordinatorMetrics,
        replan: Callable[[GangRef], None],
        timer: Timer = asyncio.sleep,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._store = store
        self._table = table
        self._writer = writer
        self._waiters = waiters
        self._metrics = metrics
        self._replan = replan  # asks for the gang to be planned again ahead of kube-scheduler's next filter
        self._timer = timer
        self._retry = retry or RetryPolicy()
        self._inline = bool(getattr(writer, "inline", False))
        self._running: dict[str, asyncio.Task[None]] = {}

    def start(self, ref: GangRef) -> None:
        """Make sure a release runs for the gang (call on the event loop)."""
        if ref.key not in self._running:
            self._running[ref.key] = asyncio.ensure_future(self._run(ref))

    async def _run(self, ref: GangRef) -> None:
        attempt = 0
        try:
            while True:
                batch = self._table.release_started(
                    ref.key,
                    pod_facts=lambda key: PodFacts.of(self._store, key),
                    used_on=self._store.used_on,
                    allocatable_of=self._store.allocatable_of,
                )
                if batch.lost:
                    log.warning("ready members lost before binding gang=%s pods=%s", ref.key, list(batch.lost))
                    self._waiters.answer(batch.lost, "the member lost its place before it was bound; it is re-planned")
                    self._replan(ref)
                if not batch.members:
                    # No await between this check and leaving ``_running``: a member that becomes ready now finds
                    # no release running and starts one.
                    return
                outcomes = await self._bind_all(batch.members)
                bound = [pod for pod, outcome in outcomes if outcome.kind is _Kind.BOUND]
                gone = [pod for pod, outcome in outcomes if outcome.kind is _Kind.GONE]
                retry = [pod for pod, outcome in outcomes if outcome.kind is _Kind.RETRY]
                self._table.release_finished(ref.key, bound=bound, gone=gone)
                self._waiters.answer([pod for pod, _ in outcomes], {pod: outcome.message for pod, outcome in outcomes})
                log.info("release pass gang=%s bound=%d gone=%d retry=%d", ref.key, len(bound), len(gone), len(retry))
                if gone:
                    self._replan(ref)
                if retry:
                    await self._timer(self._retry.delay(attempt))
                    attempt += 1
                else:
                    attempt = 0
        finally:
            self._running.pop(ref.key, None)

    async def _bind_all(self, members: tuple[tuple[str, ReadyMember], ...]) -> list[tuple[str, _Outcome]]:
        if self._inline:
            done: list[tuple[str, _Outcome]] = []
            for i, (pod, member) in enumerate(members):
                done.append((pod, await self._bind_one(pod, member)))
                if i % _YIELD_EVERY == _YIELD_EVERY - 1:
                    await asyncio.sleep(0)
            return done
        slots = asyncio.Semaphore(_CONCURRENT_BINDS)

        async def one(pod: str, member: ReadyMember) -> tuple[str, _Outcome]:
            async with slots:
                return pod, await self._bind_one(pod, member)

        return list(await asyncio.gather(*(one(pod, member) for pod, member in members)))

    async def _bind_one(self, pod: str, member: ReadyMember) -> _Outcome:
        namespace, name = pod.split("/", 1)
        try:
            await self._writer.bind(namespace=namespace, name=name, uid=member.uid, node=member.node)
        except WriteError as err:
            if err.status == 404:
                self._metrics.binds.labels("gone").inc()
                return _Outcome(_Kind.GONE, f"binding {pod} to {member.node} failed for good: {err}; re-planned")
            self._metrics.binds.labels("retry").inc()
            return _Outcome(_Kind.RETRY, f"binding {pod} to {member.node} failed: {err}; grove-extender retries it")
        except Exception as err:  # the writer's own bug must not stop the release: retried like an API error
            log.exception("bind failed pod=%s node=%s", pod, member.node)
            self._metrics.binds.labels("retry").inc()
            return _Outcome(_Kind.RETRY, f"binding {pod} failed: {type(err).__name__}; grove-extender retries it")
        self._metrics.binds.labels("bound").inc()
        return _Outcome(_Kind.BOUND)
