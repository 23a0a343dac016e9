"""Turning a gang into reservations: resolve members, solve on a frozen view, commit or discard a statement.

Plans run in worker threads (never on the event loop) and one at a time: each plan reads the reservations the
previous one committed, which is what keeps two gangs off the same GPUs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from api.kube import Pod
from placement.request import SolveOptions, Status
from scheduler.coordinator.ledger import GangRecord, GangState, Ledger
from scheduler.coordinator.members import GangMembers, GangRef, gang_members
from scheduler.coordinator.metrics import CoordinatorMetrics
from scheduler.coordinator.planner import PlanOutcome, Solver, plan_gang
from scheduler.coordinator.topology_cache import TopologyCache
from scheduler.state.store import ClusterStore

__all__ = ["Planner", "PlanningConfig"]

log = logging.getLogger(__name__)

_MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class PlanningConfig:
    reservation_ttl_seconds: float = 60.0
    solve: SolveOptions = field(default_factory=SolveOptions)


class Planner:
    def __init__(
        self,
        *,
        store: ClusterStore,
        ledger: Ledger,
        solver: Solver,
        config: PlanningConfig,
        metrics: CoordinatorMetrics,
        clock: Callable[[], float],
        topologies: TopologyCache,
    ) -> None:
        self._store = store
        self._ledger = ledger
        self._solver = solver
        self._config = config
        self._metrics = metrics
        self._clock = clock
        self._topologies = topologies
        self._serial = threading.Lock()

    def expire(self) -> list[str]:
        """Drop gangs whose reservations outlived their TTL; the next filter re-plans them."""
        with self._ledger.lock:
            expired = self._ledger.book.expire(self._clock())
            for gang in expired:
                record = self._ledger.records.get(gang)
                if record is not None and not record.fixed:
                    del self._ledger.records[gang]
            if expired:
                self._ledger.epoch += 1
        for gang in expired:
            self._metrics.reservations_expired.inc()
            log.info("reservation expired gang=%s", gang)
        return expired

    def plan(self, ref: GangRef, *, request_pod: Pod | None = None, force: bool = False) -> None:
        """Plan the gang unless it already holds a plan that needs no change (``force`` re-plans anyway)."""
        with self._serial:
            try:
                self._plan_serially(ref, request_pod=request_pod, force=force)
            finally:
                with self._ledger.lock:
                    record = self._ledger.records.get(ref.key)
                    if record is not None:
                        record.planning = False

    def _plan_serially(self, ref: GangRef, *, request_pod: Pod | None, force: bool) -> None:
        self.expire()
        for _ in range(_MAX_ATTEMPTS):
            with self._ledger.lock:
                record = self._ledger.record(ref)
                if not force and not _stale(record, self._ledger.epoch):
                    return
                fixed = dict(record.fixed)
                held = {pod: r.node for pod, r in self._ledger.book.of_gang(ref.key).items()}
                excluded = record.excluded_now(self._clock())
                reserved = self._ledger.book.reserved_by_node(excluding=ref.key)
                epoch = self._ledger.epoch
                record.dirty = False
                record.planning = True
            members = gang_members(self._store, ref, request_pod=request_pod)
            if isinstance(members, str) or (reason := members.not_ready_reason()) is not None:
                waiting_reason = members if isinstance(members, str) else reason
                self._settle(ref, state=GangState.WAITING, reason=waiting_reason or "", epoch=epoch)
                self._metrics.plans.labels("waiting").inc()
                return
            kept, only = fixed, None
            if _guarantee_met(members, fixed):
                # The gang already stands; what is left are best-effort extras, placed one by one as
                # kube-scheduler asks, around everything the gang holds.
                if request_pod is None or request_pod.key in held:
                    self._settle_bound(ref, epoch=epoch)
                    return
                kept, only = {**held, **fixed}, request_pod.key
            outcome = plan_gang(
                members=members,
                store=self._store,
                topologies=self._topologies,
                reserved=reserved,
                fixed=kept,
                excluded=excluded,
                solver=self._solver,
                options=self._config.solve,
                only=only,
            )
            if self._commit(ref, outcome=outcome, fixed=fixed, kept=kept, extra=only is not None, epoch=epoch):
                return
            force = True  # members reached the barrier while we solved: plan again around them
        log.warning("plan kept changing under the solver gang=%s attempts=%d", ref.key, _MAX_ATTEMPTS)

    def _commit(
        self,
        ref: GangRef,
        *,
        outcome: PlanOutcome,
        fixed: dict[str, str],
        kept: dict[str, str],
        extra: bool,
        epoch: int,
    ) -> bool:
        """Install the plan unless members reached the barrier meanwhile (then the caller plans again).

        ``kept`` pods keep their node (fixed at the barrier, or already reserved when planning an extra)."""
        result = outcome.result
        self._metrics.solve_seconds.observe(result.solve_seconds)
        with self._ledger.lock:
            record = self._ledger.record(ref)
            if record.fixed != fixed:
                return False
            statement = self._ledger.book.statement(ref.key)
            for pod, node in kept.items():
                statement.reserve(pod=pod, node=node, demand=self._demand(pod, outcome))
            placed = result.status == Status.PLACED
            if placed:
                for pod, node in result.assignment.items():
                    statement.reserve(pod=pod, node=node, demand=outcome.demands[pod])
            statement.commit(now=self._clock(), ttl=self._config.reservation_ttl_seconds)
            record.groups = dict(outcome.groups)
            record.planned_at = self._clock()
            record.epoch = epoch
            record.plan = {**dict(result.assignment), **kept} if placed else dict(kept)
            record.reason = "" if placed else result.reason or f"no placement found ({result.status})"
            if extra:
                record.state = GangState.BOUND  # an extra that does not fit leaves the standing gang as it is
            elif placed:
                record.state = GangState.BINDING if fixed else GangState.PLANNED
                record.placement_score = result.placement_score
            else:
                record.state = GangState.INFEASIBLE
                # Out of time is not a proof: let the next filter try again rather than wait for capacity to free.
                record.dirty = record.dirty or result.status == Status.TIMED_OUT
        self._metrics.plans.labels(str(result.status)).inc()
        log.info(
            "planned gang=%s status=%s pods=%d score=%s seconds=%.4f reason=%s",
            ref.key,
            result.status,
            len(result.assignment),
            result.placement_score,
            result.solve_seconds,
            result.reason,
        )
        return True

    def _demand(self, pod_key: str, outcome: PlanOutcome) -> dict[str, int]:
        if pod_key in outcome.demands:
            return dict(outcome.demands[pod_key])
        pod = self._store.pod(pod_key)
        return dict(self._store.requests_of(pod)) if pod is not None else {}

    def _settle_bound(self, ref: GangRef, *, epoch: int) -> None:
        """The gang stands (found bound after a restart, or bound by us): nothing to plan ahead."""
        with self._ledger.lock:
            record = self._ledger.record(ref)
            record.state = GangState.BOUND
            record.reason = ""
            record.epoch = epoch

    def _settle(self, ref: GangRef, *, state: GangState, reason: str, epoch: int) -> None:
        with self._ledger.lock:
            record = self._ledger.record(ref)
            record.state = state
            record.reason = reason
            record.epoch = epoch
            if not record.fixed:
                record.plan = {}
                if self._ledger.book.release_gang(ref.key):
                    self._ledger.epoch += 1


def _guarantee_met(members: GangMembers, fixed: dict[str, str]) -> bool:
    """Every group has ``minReplicas`` members bound or waiting at the barrier."""
    return all(
        len(group.bound()) + sum(1 for pod in group.pods if pod.key in fixed) >= group.min_replicas
        for group in members.groups
    )


def _stale(record: GangRecord, epoch: int) -> bool:
    """Whether a record's decision should be recomputed before it is used again."""
    if record.dirty:
        return True
    return record.state in (GangState.WAITING, GangState.INFEASIBLE) and record.epoch != epoch
