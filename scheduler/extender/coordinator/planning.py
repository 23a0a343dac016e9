"""Turning a gang into a plan: read the table's basis, resolve members from the store, solve, commit a transition.

A gang waiting for its first placement beside others is planned with them, the head of the queue in one model
(``head``, ``serve --batch-size``); what follows is the one-gang planning every other plan uses. A gang refused for
room may then have lower-priority work make way for it (``making_room``), under the same lock.

Plans run one at a time (in worker threads, or inline where the caller says so): each reads the reservations the
previous one committed, which is what keeps two gangs off the same GPUs. A re-plan disturbs as little as it can:
first it keeps every member's planned node and places only the members without one, then it keeps only the ready
members, and only then does it plan every unbound member afresh (ready members it moves must reach bind again).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from placement.request import FLOOR_MISMATCH, Result, SolveOptions, Status
from scheduler.extender.coordinator.eligibility_cache import EligibilityCache
from scheduler.extender.coordinator.evictions import Evictor
from scheduler.extender.coordinator.gang_state import PlanBasis, PlanCommit
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.head import HeadPlanner
from scheduler.extender.coordinator.making_room import Room, RoomMaker, RoomSettings
from scheduler.extender.coordinator.members import GangMembers, GangRef, gang_members
from scheduler.extender.coordinator.metrics import CoordinatorMetrics
from scheduler.extender.coordinator.solving import PlanOutcome, Solver, plan_gang
from scheduler.extender.coordinator.topology_cache import TopologyCache
from scheduler.extender.state.store import ClusterStore
from scheduler.extender.translation.gang_request import GangNotReady, GangRequestError

__all__ = ["Planner"]

log = logging.getLogger(__name__)

_MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class _Facts:
    """The members that are already placed, as this plan sees them."""

    pending: frozenset[str]
    bound: Mapping[str, str]
    ready: Mapping[str, str]
    kept: Mapping[str, str]


class Planner:
    def __init__(
        self,
        *,
        store: ClusterStore,
        table: GangTable,
        solver: Solver,
        options: SolveOptions,
        window: Callable[[int], float],
        metrics: CoordinatorMetrics,
        head_options: SolveOptions | None = None,
        clock: Callable[[], float],
        topologies: TopologyCache,
        evictor: Evictor,
        room: RoomSettings,
        batch_size: int = 1,
    ) -> None:
        self._store = store
        self._table = table
        self._solver = solver
        self._options = options
        self._window = window  # seconds a gang with this many members still to gather may hold its reservation
        self._metrics = metrics
        self._clock = clock
        self._topologies = topologies
        self._eligibility = EligibilityCache()
        self._head = HeadPlanner(
            store=store,
            table=table,
            options=head_options or options,
            size=batch_size,
            window=window,
            metrics=metrics,
            clock=clock,
            topologies=topologies,
            eligibility=self._eligibility,
        )
        self.room = RoomMaker(
            store=store,
            table=table,
            solver=solver,
            evictor=evictor,
            options=options,
            settings=room,
            window=window,
            metrics=metrics,
            clock=clock,
            topologies=topologies,
            eligibility=self._eligibility,
        )
        self._serial = threading.Lock()
        self._busy: dict[str, int] = {}
        self._busy_lock = threading.Lock()

    def busy(self, gang: str) -> bool:
        """A plan for the gang is running or queued: the answer the table holds may be about to change."""
        with self._busy_lock:
            return gang in self._busy

    def plan(self, ref: GangRef, *, force: bool = False, for_pod: str | None = None) -> str | None:
        """Plan the gang unless its current decision still holds (``force`` plans anyway). ``for_pod`` is the member
        a filter asks for: of a gang that already stands, only it is placed (a best-effort member). Returns why
        nothing could be placed, or None."""
        with self._busy_lock:
            self._busy[ref.key] = self._busy.get(ref.key, 0) + 1
        try:
            with self._serial:
                return self._plan(ref, force=force, for_pod=for_pod)
        finally:
            with self._busy_lock:
                left = self._busy.pop(ref.key) - 1
                if left:
                    self._busy[ref.key] = left

    def make_room(self, ref: GangRef) -> Room:
        """If the gang was refused for room, let lower-priority work make way for it (``making_room``); one that
        fits as things are now is planned the usual way. Serialised with every plan: both read and write the
        reservations."""
        with self._serial:
            outcome = self.room.try_for(ref)
            if outcome is Room.FITS:
                self._plan(ref, force=True, for_pod=None)
            return outcome

    def sweep_refused(self) -> None:
        """Give every refused gang that may preempt something another chance to have room made (the tick)."""
        self.room.sweep(self.make_room)

    def _plan(self, ref: GangRef, *, force: bool, for_pod: str | None) -> str | None:
        for _ in range(_MAX_ATTEMPTS):
            basis = self._table.planning_basis(ref, now=self._clock())
            if basis.fresh and not force:
                return None
            members = gang_members(self._store, ref)
            if isinstance(members, str):  # no PodGang yet: Grove creates it before it ungates the pods
                self._table.waiting(ref, reason=members, basis=basis, transient=True)
                self._metrics.plans.labels("waiting").inc()
                return members
            # A gang short of pods (fewer exist than a group's minimum) cannot be placed, alone or in the queue's
            # head: the one-gang path says so (the translator's message) without sorting every waiting gang, which
            # with pods arriving one by one it would do once per arrival.
            queue, under_way = ([], []) if _short_of_pods(members) else self._head.waiting_with(ref)
            if queue:  # waiting beside others for a first placement: the head of the queue is planned together
                for repaired in under_way:
                    # After a restart a gang cut mid-release has members bound and no plan: its missing members
                    # need room in the domains their bound mates hold, which the head would otherwise give away
                    # (a partly bound gang left so for good).
                    self._plan(repaired, force=False, for_pod=None)
                return self._head.plan(ref, queue)
            facts = _facts(members, basis)
            only = for_pod if for_pod in facts.pending and _stands(members, facts.bound) else None
            try:
                placement = self._solve(members, facts, basis, only=only)
            except GangNotReady as err:
                self._table.waiting(ref, reason=str(err), basis=basis, gathering=True)
                self._metrics.plans.labels("waiting").inc()
                return str(err)
            except GangRequestError as err:  # the PodGang cannot be planned as it stands: refused until it changes
                placement = (Status.INVALID, str(err))
            if not isinstance(placement, _Placement):
                status, reason = placement
                if only is None:
                    self._table.infeasible(ref, reason=reason, proven=status != Status.TIMED_OUT, basis=basis)
                return reason
            outcome = placement.outcome
            commit = PlanCommit(
                assignment=dict(outcome.result.assignment),
                kept=placement.kept,
                demands=outcome.demands,
                groups=outcome.groups,
                min_replicas=outcome.min_replicas,
                bound=facts.bound,
                placement_score=outcome.result.placement_score,
                ttl_seconds=self._window(len(facts.pending) - len(facts.ready)),
            )
            if self._table.planned(ref, commit=commit, basis=basis, now=self._clock()):
                log.info(
                    "planned gang=%s pods=%d kept=%d score=%s seconds=%.4f",
                    ref.key,
                    len(commit.assignment),
                    len(commit.kept),
                    outcome.result.placement_score,
                    outcome.result.solve_seconds,
                )
                return None
            force = True  # a member was lost or became ready elsewhere while we solved: plan again around it
        log.warning("plan kept changing under the solver gang=%s attempts=%d", ref.key, _MAX_ATTEMPTS)
        return f"gang {ref.key} kept changing while it was planned; retry"

    def _solve(
        self, members: GangMembers, facts: _Facts, basis: PlanBasis, *, only: str | None
    ) -> _Placement | tuple[Status, str]:
        """Try the placements from least to most disturbing; the first that places the gang wins."""
        if only is None and _stands(members, facts.bound):
            # The guarantee is met by bound members: nothing to solve until a best-effort member asks.
            outcome = PlanOutcome(Result(status=Status.PLACED), {}, _groups(members), _minimums(members))
            return _Placement(outcome, {**facts.kept, **facts.ready})
        tiers: list[tuple[Mapping[str, str], Mapping[str, str]]] = [(facts.ready, facts.kept)]
        if only is None:
            if facts.kept:
                tiers.append((facts.ready, {}))
            if facts.ready:
                tiers.append(({}, {}))
        refusal: tuple[Status, str] = (Status.INFEASIBLE, "")
        for ready, kept in tiers:
            outcome = plan_gang(
                members=members,
                bound=facts.bound,
                ready=ready,
                kept=kept,
                excluded=basis.excluded,
                reserved=basis.reserved_elsewhere,
                store=self._store,
                topologies=self._topologies,
                eligibility=self._eligibility,
                solver=self._solver,
                options=self._options,
                only=only,
            )
            result = outcome.result
            self._metrics.solve_seconds.observe(result.solve_seconds)
            self._metrics.solved("gang", result.objective_parts, result.solve_seconds)
            self._metrics.plans.labels(str(result.status)).inc()
            self._metrics.floor_mismatches.inc(result.objective_parts.get(FLOOR_MISMATCH, 0.0))
            if result.status == Status.PLACED:
                return _Placement(outcome, {**kept, **ready})
            refusal = (result.status, result.reason or f"gang {members.ref.key}: no placement found ({result.status})")
        log.info("not placed gang=%s status=%s reason=%s", members.ref.key, refusal[0], refusal[1])
        return refusal


@dataclass(frozen=True)
class _Placement:
    outcome: PlanOutcome
    kept: Mapping[str, str]  # members that keep the node they had


def _facts(members: GangMembers, basis: PlanBasis) -> _Facts:
    pending = frozenset(pod.key for group in members.groups for pod in group.pending())
    bound = {pod.key: pod.spec.nodeName for group in members.groups for pod in group.bound()}
    bound.update({pod: node for pod, node in basis.bound.items() if pod in pending})  # ours, not shown yet
    ready = {pod: node for pod, node in basis.ready.items() if pod in pending and pod not in bound}
    kept = {pod: node for pod, node in basis.plan.items() if pod in pending and pod not in bound and pod not in ready}
    return _Facts(pending, bound, ready, kept)


def _stands(members: GangMembers, bound: Mapping[str, str]) -> bool:
    return all(sum(1 for pod in group.pods if pod.key in bound) >= group.min_replicas for group in members.groups)


def _groups(members: GangMembers) -> dict[str, str]:
    return {pod.key: group.name for group in members.groups for pod in group.pods}


def _minimums(members: GangMembers) -> dict[str, int]:
    return {group.name: group.min_replicas for group in members.groups}


def _short_of_pods(members: GangMembers) -> bool:
    """Some group has fewer pods than its minimum, whatever their state: no plan can hold it."""
    return any(len(group.pods) < group.min_replicas for group in members.groups)
