"""The bind verb: check the call against the plan, hold it at the gang's barrier, bind the gang in one go, then
report the PodGang scheduled.

Only a bind for the planned node is accepted: kube-scheduler chose among the nodes filter returned, which was
exactly the planned one, so any other node means the plan changed under it and the retry must go through filter
again. A gang whose guarantee is already met (bound members + waiting ≥ ``minReplicas`` in every group) passes the
barrier at once, which is how best-effort extras, gangs of one and gangs found bound after a restart behave.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any

from api.extender import ExtenderBindingArgs, ExtenderBindingResult
from scheduler.cluster_writer import ClusterWriter, WriteError
from scheduler.coordinator.barrier import Arrival, BarrierTimeout, BindBarrier, Timer
from scheduler.coordinator.ledger import GangState, Ledger
from scheduler.coordinator.members import GangRef, gang_members, gang_ref_of
from scheduler.coordinator.metrics import CoordinatorMetrics
from scheduler.coordinator.status import scheduled_status
from scheduler.state.store import ClusterStore

__all__ = ["Binder"]

log = logging.getLogger(__name__)


class Binder:
    def __init__(
        self,
        *,
        store: ClusterStore,
        ledger: Ledger,
        writer: ClusterWriter,
        metrics: CoordinatorMetrics,
        clock: Callable[[], float],
        wall_clock: Callable[[], datetime],
        barrier_timeout_seconds: float,
        reservation_ttl_seconds: float,
        barrier_timer: Timer = asyncio.sleep,
    ) -> None:
        self._store = store
        self._ledger = ledger
        self._writer = writer
        self._metrics = metrics
        self._clock = clock
        self._wall_clock = wall_clock
        self._timeout = barrier_timeout_seconds
        self._ttl = reservation_ttl_seconds
        self.barrier = BindBarrier(timer=barrier_timer)
        self._inline = bool(getattr(writer, "inline", False))
        self._background: set[asyncio.Task[None]] = set()

    async def bind(self, args: ExtenderBindingArgs) -> ExtenderBindingResult:
        key = f"{args.PodNamespace}/{args.PodName}"
        pod = self._store.pod(key)
        if pod is None:
            return _error(f"pod {key} is not known to grove-extender yet; retry")
        if pod.spec.nodeName:
            if pod.spec.nodeName == args.Node:
                return ExtenderBindingResult()  # a repeated call for a binding that happened: idempotent
            return _error(f"pod {key} is already bound to {pod.spec.nodeName}")
        ref = gang_ref_of(pod)
        with self._ledger.lock:
            record = self._ledger.records.get(ref.key)
            planned = record.plan.get(key) if record else None
            group = record.groups.get(key, "") if record else ""
            if planned == args.Node and record is not None:
                record.fixed[key] = args.Node
                if record.state is GangState.PLANNED:
                    record.state = GangState.BINDING
                self._ledger.book.extend(ref.key, expires_at=self._clock() + self._ttl)
        if planned is None:
            return _error(f"pod {key} has no plan (grove-extender may have restarted); it will be re-planned")
        if planned != args.Node:
            return _error(f"pod {key} is planned on {planned}, not {args.Node}; it will be re-planned")
        arrival = Arrival(
            pod=key,
            uid=args.PodUID,
            node=args.Node,
            group=group,
            arrived_at=self._clock(),
            outcome=asyncio.get_running_loop().create_future(),
        )
        try:
            outcome = await self.barrier.wait(
                ref.key,
                arrival,
                satisfied=lambda arrived: self._satisfied(ref, arrived),
                release=lambda taken: self._release(ref, taken),
                timeout=self._timeout,
            )
        except BarrierTimeout as timeout:
            return self._timed_out(ref, key, timeout)
        finally:
            self._metrics.barrier_wait_seconds.observe(self._clock() - arrival.arrived_at)
        return _error(outcome) if outcome else ExtenderBindingResult()

    def _satisfied(self, ref: GangRef, arrived: dict[str, int]) -> bool:
        members = gang_members(self._store, ref)
        if isinstance(members, str):
            return False
        return all(len(group.bound()) + arrived.get(group.name, 0) >= group.min_replicas for group in members.groups)

    async def _release(self, ref: GangRef, taken: list[Arrival]) -> None:
        if self._inline:
            outcomes = []
            for arrival in taken:
                outcomes.append(self._bind_one(arrival))
                await asyncio.sleep(0)  # let a waiting filter in between: it is on kube-scheduler's critical path
        else:
            outcomes = list(await asyncio.gather(*(asyncio.to_thread(self._bind_one, arrival) for arrival in taken)))
        failed = [arrival.pod for arrival, outcome in zip(taken, outcomes, strict=True) if outcome]
        with self._ledger.lock:
            record = self._ledger.records.get(ref.key)
            if record is not None:
                for arrival in taken:
                    record.fixed.pop(arrival.pod, None)
                if not failed:
                    record.state = GangState.BOUND
                score = record.placement_score if record else None
        for arrival, outcome in zip(taken, outcomes, strict=True):
            if not arrival.outcome.done():
                arrival.outcome.set_result(outcome)
        if failed:
            log.error("gang bindings failed gang=%s failed=%s", ref.key, failed)
            return
        log.info("gang bound gang=%s pods=%d", ref.key, len(taken))
        if ref.solo:
            self._ledger.drop(ref.key)  # nothing left to track for a bound pod of no gang
        else:
            self._in_background(self._report_scheduled(ref, score))

    def _bind_one(self, arrival: Arrival) -> str:
        namespace, name = arrival.pod.split("/", 1)
        try:
            self._writer.bind(namespace=namespace, name=name, uid=arrival.uid, node=arrival.node)
        except WriteError as err:
            self._metrics.binds.labels("error").inc()
            return str(err)
        except Exception as err:  # the writer's own bug must not hang the gang: answer, kube-scheduler retries
            log.exception("bind failed pod=%s node=%s", arrival.pod, arrival.node)
            self._metrics.binds.labels("error").inc()
            return f"binding {arrival.pod} failed: {type(err).__name__}"
        self._metrics.binds.labels("bound").inc()
        return ""

    def _timed_out(self, ref: GangRef, key: str, timeout: BarrierTimeout) -> ExtenderBindingResult:
        with self._ledger.lock:
            record = self._ledger.records.get(ref.key)
            if record is not None:
                record.fixed.pop(key, None)
                if record.state is GangState.BINDING and not record.fixed:
                    record.state = GangState.PLANNED
                elif record.state is GangState.INFEASIBLE:
                    # It may have been infeasible only around members held at the barrier: look again.
                    record.dirty = True
        self._metrics.barrier_timeouts.inc()
        members = gang_members(self._store, ref)
        missing = ""
        if not isinstance(members, str):
            short = [
                f"{group.name}: {len(group.bound()) + timeout.waiting.get(group.name, 0)} of {group.min_replicas}"
                for group in members.groups
                if len(group.bound()) + timeout.waiting.get(group.name, 0) < group.min_replicas
            ]
            missing = "; ".join(short)
        message = (
            f"gang {ref.key}: not every guaranteed pod reached bind within {self._timeout:g}s "
            f"(ready: {missing or 'all but this call'}); nothing was bound, kube-scheduler will retry"
        )
        log.warning("bind barrier timed out gang=%s pod=%s detail=%s", ref.key, key, missing)
        return _error(message)

    async def _report_scheduled(self, ref: GangRef, score: float | None) -> None:
        podgang = self._store.podgang(ref.key)
        if podgang is None:
            return
        await asyncio.sleep(0)
        status = scheduled_status(podgang, placement_score=score, now=self._wall_clock())
        await self._write(
            "status", self._writer.patch_podgang_status, namespace=ref.namespace, name=ref.name, status=status
        )
        await self._write(
            "event",
            self._writer.record_event,
            namespace=ref.namespace,
            kind="PodGang",
            name=ref.name,
            uid=podgang.metadata.uid,
            reason="Scheduled",
            message=f"every guaranteed pod bound (placementScore {score})",
        )

    async def _write(self, what: str, write: Callable[..., None], **kwargs: Any) -> None:
        """A best-effort write after the binds were answered: logged, never raised."""
        try:
            if self._inline:
                write(**kwargs)
            else:
                await asyncio.to_thread(write, **kwargs)
        except WriteError as err:
            log.warning("podgang %s not written gang=%s/%s error=%s", what, kwargs["namespace"], kwargs["name"], err)

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _error(message: str) -> ExtenderBindingResult:
    return ExtenderBindingResult(Error=message)


def utc_now() -> datetime:
    return datetime.now(UTC)
