"""``GangTable``: the one owner of every gang's lifecycle and of the reservation book.

Filter, bind, the release, store events and the background worker call the named transitions below; none of them
writes a field. Reads come out as frozen views (``MemberView``, ``PlanBasis``, ``GangSummary``). One lock guards
everything and is held for a few dictionary operations only, never across a solve or an API call.

The state is derived from the facts (``GangRecord.state``), so it cannot disagree with them::

                 planned                         member_ready (every group: bound + ready ≥ minReplicas)
    (none) ───────────────────► Planned ─────────────────────────────────────────► Releasing
      │ preempting: planned on    ▲ │ yielded (to a higher-priority gang): back to Waiting
      │ victims' capacity         │ ▼
      └──────────────► Preempting ┘ victim_gone (the last one) ; preemption_abandoned → Waiting
      │  waiting / infeasible   ▲  │ ▲                                              │ release_finished
      ▼                         │  │ │ node_refused / unplanned: re-plan those      ├── all bound ─────► Bound
    Waiting ◄──► Infeasible ────┘  │ │ members (exclusion, capacity gone)           └── some bound ──► PartiallyBound
      ▲   planned when plannable   │ └──────────────────────────────────────────────────────────┐          │
      └────── expire (TTL), ───────┘   bind failed (retried) / member gone (re-planned) ─────────┘          │
              podgang_deleted, leadership_changed drop the record        repaired: ready again → Releasing ◄┘

Preempting is Planned with pods still to go (``awaiting``: the victims evicted for the plan, or pods already
terminating on its nodes); its members are refused on those nodes until the pods are gone.

A gang found with bound members below ``minReplicas`` (a restart after a cut release, a member lost) is
PartiallyBound from its first plan on. Bound members are facts; plans, readiness and reservations are not, and
nothing of them survives a change of leadership.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from scheduler.extender.coordinator.gang_state import (
    GangRecord,
    GangState,
    GangSummary,
    MemberView,
    NominationBasis,
    PlanBasis,
    PlanCommit,
    PlanStatus,
    PodFacts,
    ReadyMember,
    ReleaseBatch,
)
from scheduler.extender.coordinator.members import GangRef
from scheduler.extender.coordinator.reservations import ReservationBook

__all__ = ["GangTable", "PlanListener", "StateListener"]

StateListener = Callable[[GangRef, GangState | None, GangState | None], None]
"""Told (gang, state before, state after) after a transition changed a gang's state; ``None`` = no record. Runs
on the caller's thread after the table's lock is released: enqueue, do not work."""

PlanListener = Callable[[GangRef], None]
"""Told after a transition changed which node any member is planned on, or the gang's state (so also when members
bound or the record went away). Same rules as ``StateListener``."""


class GangTable:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._gangs: dict[str, GangRecord] = {}
        self._book = ReservationBook()
        self._epoch = 0  # grows whenever capacity may have been freed: a refusal may not hold any more
        self._plans = 0  # grows whenever a plan is committed: reservations that could yield to a higher gang
        # Member news of gangs without a record yet: a member that arrives while the gang's first plan is under way
        # must make that plan's decision stale, or a "not created yet" refusal would hold until capacity frees.
        self._news_before_record: dict[str, int] = {}
        self._awaited_by: dict[str, str] = {}  # pod a preempting gang waits to see gone → that gang
        self._listeners: list[StateListener] = []
        self._plan_listeners: list[PlanListener] = []

    def subscribe(self, listener: StateListener) -> None:
        self._listeners.append(listener)

    def subscribe_plans(self, listener: PlanListener) -> None:
        self._plan_listeners.append(listener)

    # --- reads -------------------------------------------------------------------------------------------------

    def member(self, gang: str, pod: str) -> MemberView | None:
        with self._lock:
            g = self._gangs.get(gang)
            if g is None:
                return None
            ready = g.ready.get(pod)
            planned = g.plan.get(pod)
            return MemberView(
                gang=gang,
                state=g.state,
                refusal=g.refusal,
                transient=g.transient,
                stale=not self._fresh(g),
                planned=planned,
                ready=ready.node if ready else None,
                bound=g.bound.get(pod),
                group=g.groups.get(pod),
                complete=g.complete,
                counts=g.counts(),
                awaiting=tuple(sorted(p for p, node in g.awaiting.items() if node == planned)) if planned else (),
                vacated_at=g.vacated.get(planned) if planned else None,
            )

    def planning_basis(self, ref: GangRef, *, now: float) -> PlanBasis:
        with self._lock:
            g = self._gangs.get(ref.key)
            return PlanBasis(
                exists=g is not None,
                fresh=g is not None and self._fresh(g),
                structure=g.structure if g else 0,
                news=g.news if g else self._news_before_record.get(ref.key, 0),
                epoch=self._epoch,
                plans=self._plans,
                plan=dict(g.plan) if g else {},
                ready={pod: member.node for pod, member in g.ready.items()} if g else {},
                bound=dict(g.bound) if g else {},
                excluded={
                    group: frozenset(node for node, until in nodes.items() if until > now)
                    for group, nodes in (g.excluded.items() if g else ())
                },
                reserved_elsewhere=self._book.reserved_by_node(excluding=ref.key),
                held={pod: dict(r.demand) for pod, r in self._book.of_gang(ref.key).items()},
            )

    def unstarted(self, gangs: Sequence[str]) -> list[str]:
        """Of ``gangs``, those waiting for a first placement: no record, or nothing planned, ready or bound and no
        decision that still holds. A batch plans these together (the ones under way keep their own plans)."""
        with self._lock:
            return [
                key
                for key in gangs
                if (g := self._gangs.get(key)) is None
                or (not g.plan and not g.ready and not g.bound and not self._fresh(g))
            ]

    def nomination_basis(self, gang: str) -> NominationBasis:
        """What the gang's nominations follow: its plan, which members reached bind, which are bound."""
        with self._lock:
            g = self._gangs.get(gang)
            if g is None:
                return NominationBasis({}, frozenset(), frozenset())
            return NominationBasis(dict(g.plan), frozenset(g.ready), frozenset(g.bound))

    def summary(self, gang: str) -> GangSummary | None:
        with self._lock:
            g = self._gangs.get(gang)
            if g is None:
                return None
            return GangSummary(g.ref, g.state, g.refusal, g.counts(), g.placement_score, gathering=g.gathering)

    def fits(self, node: str, *, used: Mapping[str, int], allocatable: Mapping[str, int]) -> bool:
        """Bound pods (``used``) + every reservation on ``node`` within its allocatable."""
        with self._lock:
            reserved = self._book.reserved_on(node)
            return _within(used, reserved, allocatable)

    def describe(self, *, now: float) -> list[dict[str, Any]]:
        with self._lock:
            return [
                g.describe(now=now, reserved_since=self._book.created_at(k)) for k, g in sorted(self._gangs.items())
            ]

    def counts_by_state(self) -> dict[str, int]:
        with self._lock:
            counts = {str(state): 0 for state in GangState}
            for g in self._gangs.values():
                counts[str(g.state)] += 1
            return counts

    def reservation_count(self) -> int:
        with self._lock:
            return self._book.count()

    # --- planning ----------------------------------------------------------------------------------------------

    def waiting(
        self, ref: GangRef, *, reason: str, basis: PlanBasis, transient: bool = False, gathering: bool = False
    ) -> None:
        """Nothing new is planned: guaranteed members missing or gated (``gathering``), the PodGang not in our
        store yet (``transient``), or the gang deferred behind others. Ready members keep their reservations (the
        gang may complete as soon as the rest appear); planned-only members give theirs back."""
        with self._changing(ref.key):
            g = self._record(ref)
            g.plan_status, g.refusal, g.transient = PlanStatus.WAITING, reason, transient
            g.gathering = gathering or transient
            g.decided = (basis.structure, basis.news, basis.epoch)
            self._stop_awaiting(g)
            g.plan = {pod: member.node for pod, member in g.ready.items()}
            g.replans += 1
            self._keep_reservations(g, set(g.ready))

    def infeasible(self, ref: GangRef, *, reason: str, proven: bool, basis: PlanBasis) -> None:
        """No placement for the members still to place, even moving the ready ones: give back everything that is
        not bound. An unproven refusal (the solver ran out of time) is tried again on the next filter."""
        with self._changing(ref.key):
            g = self._record(ref)
            g.plan_status, g.refusal, g.transient = PlanStatus.INFEASIBLE, reason, False
            g.gathering = False
            g.decided = (basis.structure, basis.news, basis.epoch) if proven else None
            self._give_back(g)

    def planned(self, ref: GangRef, *, commit: PlanCommit, basis: PlanBasis, now: float) -> bool:
        """Install a plan, unless the gang moved past its basis (a member lost, or one became ready on another
        node than this plan gives it): then the caller plans again."""
        with self._changing(ref.key):
            installed = self._install(ref, commit=commit, basis=basis, now=now)
            if installed:
                self._stop_awaiting(self._gangs[ref.key])
            return installed

    def _install(self, ref: GangRef, *, commit: PlanCommit, basis: PlanBasis, now: float) -> bool:
        """Under the lock: ``planned``'s work, shared with ``preempting``."""
        g = self._gangs.get(ref.key)
        if g is not None and g.structure != basis.structure:
            return False
        if g is not None and any(
            commit.assignment.get(pod, commit.kept.get(pod, node)) != node for pod, node in g.bound.items()
        ):
            return False  # a member was bound since the plan read the gang, elsewhere than the plan puts it
        moved = [
            pod
            for pod, member in (g.ready.items() if g else ())
            if commit.assignment.get(pod, commit.kept.get(pod)) != member.node
        ]
        if any(pod not in basis.ready for pod in moved):
            return False  # became ready on a node this plan gives away: plan again around it
        g = self._record(ref)
        for pod in moved:
            g.unset_ready(pod)  # the planner moved it knowingly: it must reach bind for its new node
        g.set_groups(commit.groups, commit.min_replicas)
        for pod, node in commit.bound.items():
            if pod not in g.bound:
                g.set_bound(pod, node)
        g.plan = {**commit.kept, **commit.assignment}
        g.replans += 1
        statement = self._book.statement(ref.key)
        for pod, node in g.plan.items():
            demand = commit.demands.get(pod) or basis.held.get(pod)
            statement.reserve(pod=pod, node=node, demand=demand or {})
        statement.commit(now=now, ttl=commit.ttl_seconds)
        self._plans += 1
        g.plan_status, g.refusal, g.transient = PlanStatus.PLANNED, "", False
        g.gathering = False
        g.decided = (g.structure, basis.news, self._epoch)
        if commit.assignment:
            g.placement_score = commit.placement_score
        return True

    # --- priority: reservations that yield, plans that wait for victims -------------------------------------------

    def started(self, gang: str) -> bool:
        """Whether the gang has begun binding (a member ready or bound, or a release under way): from then on its
        reservations are not given to another gang."""
        with self._lock:
            g = self._gangs.get(gang)
            return g is not None and bool(g.ready or g.bound or g.releasing)

    def refused(self) -> list[GangRef]:
        """Gangs whose last plan refused them (Waiting for room or their turn, or Infeasible) and that hold
        nothing: what a gang of higher priority may make room for. Not those gathering their own members: room
        cannot place pods that are missing or gated, and with a fleet's pods arriving gated that is most gangs."""
        with self._lock:
            return [
                g.ref
                for g in self._gangs.values()
                if g.state in (GangState.WAITING, GangState.INFEASIBLE) and not g.gathering and not g.plan
            ]

    def reserved_gangs(self) -> list[tuple[GangRef, dict[str, tuple[str, dict[str, int]]]]]:
        """Every gang holding reservations and not started, with pod → (node, demand) of each: what a gang of
        higher priority may take (``yielded``)."""
        with self._lock:
            return [
                (g.ref, {pod: (r.node, dict(r.demand)) for pod, r in held.items()})
                for key, g in self._gangs.items()
                if not (g.ready or g.bound or g.releasing) and (held := self._book.of_gang(key))
            ]

    def yielded(self, gang: str, *, reason: str) -> bool:
        """The gang gives its reservations to a gang of higher priority and waits (``reason`` says for whom); it
        is planned again when capacity frees. False, and nothing changes, if it started binding meanwhile."""
        with self._changing(gang):
            g = self._gangs.get(gang)
            if g is None or g.ready or g.bound or g.releasing:
                return False
            self._give_back(g)
            g.plan_status, g.refusal, g.transient = PlanStatus.WAITING, reason, False
            g.gathering = False
            g.decided = (g.structure, g.news, self._epoch)
            return True

    def preempting(
        self, ref: GangRef, *, commit: PlanCommit, basis: PlanBasis, awaiting: Mapping[str, str], now: float
    ) -> bool:
        """Install a plan made on capacity that ``awaiting`` pods (pod → node) still hold: victims being evicted for
        it, or pods already terminating. Reservations are held as for ``planned``; until the pods are gone
        (``victim_gone``) the gang is Preempting and its members are refused on those nodes."""
        with self._changing(ref.key):
            if not self._install(ref, commit=commit, basis=basis, now=now):
                return False
            g = self._gangs[ref.key]
            self._stop_awaiting(g)
            for pod, node in awaiting.items():
                g.awaiting[pod] = node
                self._awaited_by[pod] = ref.key
            return True

    def awaiting(self, gang: str) -> dict[str, str]:
        """Pod → node of what the gang's plan still waits to see gone."""
        with self._lock:
            g = self._gangs.get(gang)
            return dict(g.awaiting) if g else {}

    def victim_gone(self, pod: str, *, now: float) -> None:
        """The store no longer has the pod: a gang waiting for it stops waiting (Preempting → Planned once the
        last one is gone), and remembers when the last one left its node (kube-scheduler sees it a little later)."""
        with self._lock:
            gang = self._awaited_by.get(pod)
        if gang is None:
            return
        with self._changing(gang):
            self._awaited_by.pop(pod, None)
            g = self._gangs.get(gang)
            node = g.awaiting.pop(pod, None) if g is not None else None
            if g is not None and node is not None:
                if node not in g.awaiting.values():
                    g.vacated[node] = now
                g.replans += 1  # its members may go to their nodes now: the plan listeners hear it

    def preemption_abandoned(self, gang: str, *, reason: str) -> None:
        """The pods the plan waits for will not go (a PodDisruptionBudget refused, they never terminated): give
        the plan back and wait, saying why. Planned again when capacity frees or the gang changes."""
        with self._changing(gang):
            g = self._gangs.get(gang)
            if g is None or not g.awaiting:
                return
            self._give_back(g)
            g.plan_status, g.refusal, g.transient = PlanStatus.WAITING, reason, False
            g.gathering = False
            g.decided = (g.structure, g.news, self._epoch)

    # --- what filter learns ------------------------------------------------------------------------------------

    def node_refused(self, gang: str, pod: str, *, node: str, until: float) -> None:
        """kube-scheduler's own filters dropped the member's planned node: keep the group off it for a while and
        re-plan the member."""
        with self._changing(gang):
            g = self._gangs.get(gang)
            if g is None:
                return
            g.excluded.setdefault(g.groups.get(pod, ""), {})[node] = until
            self._unplan(g, [pod])

    def unplanned(self, gang: str, pods: Sequence[str]) -> None:
        """The members' planned node no longer has room (a pod bound there by someone else): re-plan them."""
        with self._changing(gang):
            g = self._gangs.get(gang)
            if g is not None:
                self._unplan(g, pods)

    # --- bind and release --------------------------------------------------------------------------------------

    def member_ready(self, gang: str, pod: str, *, member: ReadyMember, expires_at: float) -> MemberView | None:
        """The member's bind call for its planned node arrived. Pushes the reservation's expiry out (the gang is
        gathering); returns the member's view after (``complete``: release now), None if its plan changed."""
        with self._changing(gang):
            g = self._gangs.get(gang)
            if g is None or g.plan.get(pod) != member.node:
                return None
            g.set_ready(pod, member)
            self._book.extend(gang, expires_at=expires_at)
        return self.member(gang, pod)

    def release_started(
        self,
        gang: str,
        *,
        pod_facts: Callable[[str], PodFacts],
        used_on: Callable[[str], Mapping[str, int]],
        allocatable_of: Callable[[str], Mapping[str, int]],
    ) -> ReleaseBatch:
        """Pick the ready members to bind now. First drop those the API no longer backs (pod gone or re-created)
        and those whose node lost room meanwhile (a pod of another scheduler took it); bind nothing unless the
        guarantee still holds after that. Never overcommits: every node keeps bound + reserved ≤ allocatable."""
        with self._changing(gang):
            g = self._gangs.get(gang)
            if g is None:
                return ReleaseBatch(())
            lost: list[str] = []
            for pod, member in list(g.ready.items()):
                facts = pod_facts(pod)
                if facts.known and facts.node_name == member.node:
                    g.set_bound(pod, member.node)
                    self._book.release_pod(pod)
                elif not facts.known or facts.uid != member.uid or facts.node_name:
                    lost.append(pod)
            nodes = {member.node for pod, member in g.ready.items() if pod not in lost}
            for node in nodes:
                if not _within(used_on(node), self._book.reserved_on(node), allocatable_of(node)):
                    lost.extend(pod for pod, member in g.ready.items() if member.node == node and pod not in lost)
            self._unplan(g, lost)
            if not g.complete or not g.ready:
                return ReleaseBatch((), tuple(lost))
            g.releasing = True
            g.binding = set(g.ready)
            return ReleaseBatch(tuple(g.ready.items()), tuple(lost))

    def release_finished(self, gang: str, *, bound: Sequence[str], gone: Sequence[str]) -> None:
        """The release pass is over: ``bound`` members are bound (facts now, before the watch shows them),
        ``gone`` ones were refused for good (re-planned); every other member taken stays ready to be retried."""
        with self._changing(gang):
            g = self._gangs.get(gang)
            if g is None:
                return
            for pod in bound:
                member = g.ready.get(pod)
                if member is not None:
                    g.set_bound(pod, member.node)
            self._unplan(g, gone)
            g.binding.clear()
            g.releasing = False

    # --- what the store reports --------------------------------------------------------------------------------

    def member_bound_observed(self, gang: str, pod: str, *, node: str) -> None:
        """The store shows the pod bound: it holds capacity as a bound pod now, not as a reservation."""
        with self._changing(gang):
            self._book.release_pod(pod)
            g = self._gangs.get(gang)
            if g is None:
                return
            if pod in g.groups:
                g.set_bound(pod, node)
            if g.ref.solo and g.whole and not g.releasing:
                self._drop(gang)

    def member_gone(self, gang: str, pod: str) -> None:
        """The pod was deleted or finished: its capacity and its place in the plan are free."""
        with self._changing(gang):
            held = self._book.release_pod(pod) is not None
            g = self._gangs.get(gang)
            if g is not None:
                held = held or pod in g.bound
                self._unplan(g, [pod])
                g.unset_bound(pod)
                if g.ref.solo:
                    self._drop(gang)
            if held:
                self._epoch += 1

    def members_changed(self, gang: str) -> None:
        """A member appeared, was ungated or changed, or the PodGang changed: a refusal may not hold any more."""
        with self._lock:
            g = self._gangs.get(gang)
            if g is not None:
                g.news += 1
            else:
                self._news_before_record[gang] = self._news_before_record.get(gang, 0) + 1

    def capacity_freed(self) -> None:
        with self._lock:
            self._epoch += 1

    def forget(self, gang: str) -> list[str]:
        """Drop the gang entirely (its PodGang was deleted, or its PodGang and pods are all gone); returns the
        members that were ready, whose waiting bind calls must be answered now."""
        with self._changing(gang):
            g = self._gangs.get(gang)
            ready = list(g.ready) if g else []
            self._drop(gang)
            return ready

    # --- time and leadership -----------------------------------------------------------------------------------

    def expire(self, now: float) -> list[str]:
        """Give back the reservations of gangs that stopped progressing; a gang with bound members keeps its
        record (it is partly bound and the next filter re-plans it), any other is forgotten."""
        expired: list[str] = []
        with self._lock:
            for gang in self._book.expired(now):
                g = self._gangs.get(gang)
                if g is not None and g.releasing:
                    continue  # binding right now: the pass decides what is left
                expired.append(gang)
        for gang in expired:
            with self._changing(gang):
                g = self._gangs.get(gang)
                if g is None or not g.bound:
                    self._drop(gang)
                    continue
                self._give_back(g)
                g.structure += 1
        return expired

    def leadership_changed(self) -> list[str]:
        """Another replica may have acted meanwhile: keep nothing but what the API says. Returns the members that
        were ready (their waiting bind calls must be answered)."""
        with self._lock:
            gangs = list(self._gangs)
        ready: list[str] = []
        for gang in gangs:
            ready.extend(self.forget(gang))
        with self._lock:
            self._book = ReservationBook()
            self._epoch += 1
        return ready

    # --- internals ---------------------------------------------------------------------------------------------

    def _fresh(self, g: GangRecord) -> bool:
        if g.decided is None:
            return False
        structure, news, epoch = g.decided
        if g.plan_status is PlanStatus.PLANNED:
            return (structure, news) == (g.structure, g.news)  # capacity freed elsewhere does not undo a plan
        return (structure, news, epoch) == (g.structure, g.news, self._epoch)

    def _record(self, ref: GangRef) -> GangRecord:
        g = self._gangs.get(ref.key)
        if g is None:
            g = GangRecord(ref=ref, plan_status=PlanStatus.WAITING)
            g.news = self._news_before_record.pop(ref.key, 0)
            self._gangs[ref.key] = g
        return g

    def _unplan(self, g: GangRecord, pods: Sequence[str]) -> None:
        """Members that lose their place (and readiness): their reservations go back, later plans re-place them."""
        if not pods:
            return
        for pod in pods:
            g.unset_ready(pod)
            g.plan.pop(pod, None)
            if self._book.release_pod(pod) is not None:
                self._epoch += 1
        g.structure += 1
        g.replans += 1

    def _keep_reservations(self, g: GangRecord, pods: set[str]) -> None:
        for pod in set(self._book.of_gang(g.key)) - pods:
            self._book.release_pod(pod)
            self._epoch += 1

    def _give_back(self, g: GangRecord) -> None:
        """Under the lock: the gang holds nothing any more but what is bound — no plan, no ready member, no
        reservation, no pod it waits to see gone."""
        self._stop_awaiting(g)
        for pod in list(g.ready):
            g.unset_ready(pod)
        g.plan = {}
        g.replans += 1
        self._keep_reservations(g, set())

    def _stop_awaiting(self, g: GangRecord) -> None:
        for pod in g.awaiting:
            if self._awaited_by.get(pod) == g.key:
                del self._awaited_by[pod]
        g.awaiting.clear()
        g.vacated.clear()

    def _drop(self, gang: str) -> None:
        g = self._gangs.get(gang)
        if g is not None:
            self._stop_awaiting(g)
        self._gangs.pop(gang, None)
        self._news_before_record.pop(gang, None)
        if self._book.release_gang(gang):
            self._epoch += 1

    @contextmanager
    def _changing(self, gang: str) -> Iterator[None]:
        """Hold the lock for a transition and tell the listeners afterwards if the gang's state (or, for the plan
        listeners, its plan) moved."""
        with self._lock:
            g = self._gangs.get(gang)
            ref, before = (g.ref, g.state) if g else (None, None)
            replans = g.replans if g else -1
            yield
            g = self._gangs.get(gang)
            after = g.state if g else None
            ref = g.ref if g else ref
            replanned = (g.replans if g else -1) != replans
        if ref is None:
            return
        if before != after:
            for listener in self._listeners:
                listener(ref, before, after)
        if before != after or replanned:
            for plan_listener in self._plan_listeners:
                plan_listener(ref)


def _within(used: Mapping[str, int], reserved: Mapping[str, int], allocatable: Mapping[str, int]) -> bool:
    return all(used.get(name, 0) + reserved.get(name, 0) <= allocatable.get(name, 0) for name in {*used, *reserved})
