"""The bind verb: a bind call for a member's planned node makes it *ready*; a gang whose every group has
``minReplicas`` members bound or ready is released (``release``).

By the time kube-scheduler sends bind it has run its own Reserve and PreBind plugins for the pod (volume binding
sets a WaitForFirstConsumer claim's node, DRA allocates claims), so a ready member may be bound by the extender at
any later time while its reservation holds; a pod that only passed filter never is. The call itself waits only
briefly for its own outcome (``bind_wait_seconds``, well under kube-scheduler's ``httpTimeout``), and only if the
rest of its gang can arrive meanwhile at kube-scheduler's pace: then it answers ``Error`` saying the member is
ready and what its gang still waits for, and kube-scheduler backs the pod off until the release binds it
(kube-scheduler then drops it from its queue). Answering at once a call whose gang is far from complete keeps
kube-scheduler's binding goroutines and connections from piling up behind a large gang.
"""

from __future__ import annotations

from collections.abc import Callable

from api.extender import ExtenderBindingArgs, ExtenderBindingResult
from scheduler.extender.coordinator.decisions import Done, Fail, decide_bind, ready_message
from scheduler.extender.coordinator.gang_state import PodFacts, ReadyMember
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import gang_ref_of
from scheduler.extender.coordinator.metrics import CoordinatorMetrics
from scheduler.extender.coordinator.release import Releaser
from scheduler.extender.coordinator.waiters import BindWaiters
from scheduler.extender.state.store import ClusterStore

__all__ = ["Binder"]


class Binder:
    def __init__(
        self,
        *,
        store: ClusterStore,
        table: GangTable,
        releaser: Releaser,
        waiters: BindWaiters,
        metrics: CoordinatorMetrics,
        clock: Callable[[], float],
        wait_seconds: float,
        window: Callable[[int], float],
        pace: Callable[[], float],
    ) -> None:
        self._store = store
        self._table = table
        self._releaser = releaser
        self._waiters = waiters
        self._metrics = metrics
        self._clock = clock
        self._wait = wait_seconds
        self._window = window  # reservation lifetime granted for this many members still to gather
        self._pace = pace  # members per second kube-scheduler can offer now (a floor when it has been idle)

    async def bind(self, args: ExtenderBindingArgs) -> ExtenderBindingResult:
        key = f"{args.PodNamespace}/{args.PodName}"
        stored = self._store.pod(key)
        ref = gang_ref_of(stored) if stored is not None else None
        member = self._table.member(ref.key, key) if ref is not None else None
        decision = decide_bind(
            key=key, request_uid=args.PodUID, node=args.Node, pod=PodFacts.of(self._store, key), member=member
        )
        if isinstance(decision, Done):
            return ExtenderBindingResult()
        if isinstance(decision, Fail):
            return ExtenderBindingResult(Error=decision.reason)
        assert ref is not None and member is not None  # decide_bind only makes a member with a plan ready
        missing = sum(c.min_replicas - c.bound - c.ready for c in member.counts if c.short)
        started = self._clock()
        after = self._table.member_ready(
            ref.key,
            key,
            member=ReadyMember(node=decision.node, uid=args.PodUID),
            expires_at=started + self._window(missing),
        )
        if after is None:
            return ExtenderBindingResult(Error=f"pod {key}: the plan changed meanwhile; it will be re-planned")
        # Registered before the first await: releases run on this loop, so none can answer before this line.
        waiter = self._waiters.register(key)
        if after.complete:
            self._releaser.start(ref)
        # Worth waiting only if the members still missing can reach bind within the wait.
        wait = self._wait if after.complete or missing - 1 <= self._pace() * self._wait else 0.0
        outcome = await self._waiters.wait(key, waiter, seconds=wait)
        self._metrics.bind_wait_seconds.observe(self._clock() - started)
        if outcome is None:
            now = self._table.member(ref.key, key)
            if now is not None and now.bound == decision.node:
                return ExtenderBindingResult()  # bound while the answer was on its way
            self._metrics.bind_waits_expired.inc()
            lost = f"pod {key} lost its place while it waited; it will be re-planned"
            return ExtenderBindingResult(Error=ready_message(key, now) if now and now.ready else lost)
        return ExtenderBindingResult(Error=outcome)
