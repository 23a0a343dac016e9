"""The head of the waiting queue planned together (``serve --batch-size K``, K > 1): queue-aware planning.

The gangs waiting for a first placement — a PodGang with nothing planned, ready or bound and no decision that still
holds — are ordered by priority, then PodGang age; the first K that can be translated are handed to
``placement.batch.plan_batch``, which decides in one model which start now and where. Only those K are translated:
translation (eligibility over every node) costs more than the model, and hundreds of gangs may wait. Each outcome
goes through the same ``GangTable`` transitions a one-gang plan uses: a ``Placed`` gang's plan is committed
(``planned``: its reservations keep the capacity from every gang still waiting), a ``Deferred`` gang waits with the
reason (``waiting``; it is planned again when capacity frees or the gang changes), and an infeasible, timed-out or
invalid one is refused (``infeasible``). Gangs beyond the head are left as they are. Gangs under way (members
planned, ready or bound) and gangs of one keep the one-gang planning of ``planning``, which disturbs what they hold
as little as it can.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from placement.batch import plan_batch
from placement.request import ClusterView, Result, SolveOptions, Status
from scheduler.extender.coordinator.eligibility_cache import EligibilityCache
from scheduler.extender.coordinator.gang_state import PlanBasis, PlanCommit
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangMembers, GangRef, gang_members
from scheduler.extender.coordinator.metrics import CoordinatorMetrics
from scheduler.extender.coordinator.solving import Translated, free_capacity, translate
from scheduler.extender.coordinator.topology_cache import TopologyCache
from scheduler.extender.state.store import ClusterStore
from scheduler.extender.translation.gang_request import GangNotReady, GangRequestError
from scheduler.extender.translation.priority import gang_priority

__all__ = ["HeadPlanner"]

log = logging.getLogger(__name__)

_NEVER = datetime.max.replace(tzinfo=UTC)  # a PodGang without a timestamp counts as the youngest


@dataclass(frozen=True)
class _Waiting:
    ref: GangRef
    basis: PlanBasis
    gang: Translated


def _has_bound(store: ClusterStore, gang: str) -> bool:
    return any(pod.spec.nodeName and not pod.terminal for pod in store.pods_of_gang(gang))


class HeadPlanner:
    """Plans the head of the waiting queue; the caller (``Planner``) holds its lock around every call."""

    def __init__(
        self,
        *,
        store: ClusterStore,
        table: GangTable,
        options: SolveOptions,
        size: int,
        window: Callable[[int], float],
        metrics: CoordinatorMetrics,
        clock: Callable[[], float],
        topologies: TopologyCache,
        eligibility: EligibilityCache,
    ) -> None:
        self._store = store
        self._table = table
        self._options = options
        self._size = size
        self._window = window
        self._metrics = metrics
        self._clock = clock
        self._topologies = topologies
        self._eligibility = eligibility
        self._ordered: tuple[int, dict[str, GangRef], dict[str, int]] | None = None

    def waiting_with(self, ref: GangRef) -> tuple[list[GangRef], list[GangRef]]:
        """The gangs waiting for a first placement, oldest first, if ``ref`` is one of them and not alone (one
        gang alone is planned as one), else none; and, beside them, the gangs under way (a member bound) with no
        record in the table: their missing members must be planned before the head takes the room they need."""
        if ref.solo or self._size <= 1:
            return [], []
        # A gang whose pods our kube-scheduler profile never offers is not ours to hold capacity for; a gang with a
        # member bound (found so after a restart, say) is under way, whatever the table knows.
        keys: list[str] = []
        under_way: list[str] = []
        for key in self._table.unstarted(self._store.podgang_keys()):
            pods = self._store.pods_of_gang(key)
            if any(self._store.offered(pod) for pod in pods):
                (under_way if any(p.spec.nodeName and not p.terminal for p in pods) else keys).append(key)
        if ref.key not in keys or len(keys) < 2:
            return [], []  # the common case in Grove's flow, where gangs arrive one by one: nothing sorted
        refs, rank = self._by_age()

        def oldest_first(found: list[str]) -> list[GangRef]:  # a PodGang gone since it was read is left out
            return [refs[key] for key in sorted((k for k in found if k in rank), key=rank.__getitem__)]

        return oldest_first(keys), oldest_first(under_way)

    def _by_age(self) -> tuple[dict[str, GangRef], dict[str, int]]:
        """Every PodGang's ref by key and its place oldest first; sorted again only once a PodGang has come or gone
        (a plan is asked for on every member's arrival and status change; the order reads names and creation times
        alone)."""
        version = self._store.podgang_version  # read before the PodGangs: a change meanwhile sorts again next time
        if self._ordered is None or self._ordered[0] != version:
            podgangs = sorted(self._store.podgangs(), key=lambda g: (g.metadata.creationTimestamp or _NEVER, g.key))
            refs = {g.key: GangRef(g.metadata.namespace, g.metadata.name) for g in podgangs}
            self._ordered = (version, refs, {key: place for place, key in enumerate(refs)})
        return self._ordered[1], self._ordered[2]

    def plan(self, ref: GangRef, queue: Sequence[GangRef]) -> str | None:
        """Plan the head of ``queue`` (oldest first) in one model and commit every outcome; returns why ``ref``
        was not placed (None when it was, or when it is beyond the head and left waiting as it was)."""
        now = self._clock()
        # The head is chosen before anything is translated: translating (eligibility over every node) and reading
        # each gang's basis cost far more than the model, and the queue can hold hundreds of gangs.
        candidates: list[tuple[int, int, GangRef, GangMembers]] = []
        for position, queued in enumerate(queue):
            members = gang_members(self._store, queued)
            if isinstance(members, str):
                continue  # its PodGang went away meanwhile
            pods = (pod for group in members.groups for pod in group.pods)
            priority = gang_priority(members.podgang, pods, self._store).value
            candidates.append((-priority, position, queued, members))
        candidates.sort(key=lambda c: (c[0], c[1]))  # by priority, then age: plan_batch's own order
        waiting: list[_Waiting] = []
        reasons: dict[str, str | None] = {}
        for _, _, queued, members in candidates:
            if len(waiting) == self._size:
                break  # the rest are beyond the head: left waiting as they are
            basis = self._table.planning_basis(queued, now=now)
            # Read again after the basis: a member that arrived since the read above has already made its news, and
            # a decision taken on the older read would hold against it (a "not created yet" wait for good).
            members = gang_members(self._store, queued)
            if isinstance(members, str):
                continue
            try:
                gang = translate(
                    members=members,
                    facts=dict(basis.bound),
                    excluded=basis.excluded,
                    store=self._store,
                    eligibility=self._eligibility,
                )
            except GangRequestError as err:
                # Another gang that cannot be planned now (finished, still gathering, malformed) is left as it is
                # until a plan of its own says so; the one asked about gets its answer here.
                if queued == ref:
                    if isinstance(err, GangNotReady):
                        self._table.waiting(queued, reason=str(err), basis=basis, gathering=True)
                    else:
                        self._table.infeasible(queued, reason=str(err), proven=True, basis=basis)
                    reasons[queued.key] = str(err)
                continue
            if gang.request.groups:
                waiting.append(_Waiting(queued, basis, gang))
        if not waiting:
            return reasons.get(ref.key)
        # None of them holds a reservation: what is free for one is free for all.
        free = free_capacity(store=self._store, reserved=waiting[0].basis.reserved_elsewhere)
        view = ClusterView(topology=self._topologies.get(self._store), free=free, replaced=True)
        started = time.perf_counter()
        batch = plan_batch([w.gang.request for w in waiting], view, self._options, size=self._size)
        took = time.perf_counter() - started
        self._metrics.queue_heads.inc()
        self._metrics.solved("head", batch.objective_parts, took)
        self._metrics.solve_seconds.observe(took)
        by_key = {w.ref.key: w for w in waiting}
        for key in batch.head:
            reasons[key] = self._commit(by_key[key], batch.results[key], now=now)
        log.info(
            "planned queue head=%d waiting=%d placed=%d models=%d optimal=%d seconds=%.4f",
            len(batch.head),
            len(waiting),
            sum(1 for key in batch.head if reasons[key] is None),
            batch.objective_parts.get("models", 0),
            batch.objective_parts.get("optimal", 0),
            took,
        )
        return reasons.get(ref.key)

    def _commit(self, gang: _Waiting, result: Result, *, now: float) -> str | None:
        self._metrics.plans.labels(str(result.status)).inc()
        reason = result.reason or f"gang {gang.ref.key}: no placement found ({result.status})"
        if result.status is Status.DEFERRED:
            self._table.waiting(gang.ref, reason=reason, basis=gang.basis)
            return reason
        if result.status is not Status.PLACED:
            self._table.infeasible(
                gang.ref, reason=reason, proven=result.status is not Status.TIMED_OUT, basis=gang.basis
            )
            return reason
        pending = sum(len(group.pods) for group in gang.gang.request.groups)
        commit = PlanCommit(
            assignment=dict(result.assignment),
            kept={},
            demands=gang.gang.demands,
            groups=gang.gang.groups,
            min_replicas=gang.gang.min_replicas,
            bound=gang.basis.bound,
            placement_score=result.placement_score,
            ttl_seconds=self._window(pending),
        )
        if not self._table.planned(gang.ref, commit=commit, basis=gang.basis, now=now):
            return f"gang {gang.ref.key} changed while it was planned; retry"
        return None
