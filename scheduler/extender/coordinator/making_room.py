"""``RoomMaker``: when a gang is refused for room, lower-priority work makes way for it — whole gangs only.

Called on the planner's thread, under the planner's lock (a plan reads the reservations the previous one left), for
a gang that has not started (nothing ready or bound) and whose last plan refused it:

1. **Reservations yield first.** Gangs of lower priority that hold reservations and have not started binding may
   give them up: the victim model (``placement.preemption``) is asked with those alone. Nothing running is
   touched; the gangs that yield go back to the queue with a reason naming the gang they yielded to.
2. **Then preemption**, unless the gang's ``preemptionPolicy`` is ``Never``: lower-priority running pods join the
   candidates (``victims``), and the model picks the cheapest set that lets the *whole* gang in (every group's
   ``minReplicas``, its required packs): the lowest highest-priority first, then the fewest GPUs, then the fewest
   gangs touched; no victim gang is left below its ``minReplicas`` in any group.
3. **The plan is committed as Preempting** (``GangTable.preempting``): its reservations hold the capacity, and its
   members wait until the victims are gone. The ``Evictor`` (on the reporter's thread) evicts them; the Events name
   the gang they made way for.

A gang that fits once the model looks again (its refusal was older than the room freed since) makes no room: it
is handed back to the planner (``Room.FITS``). When attempts run again, how long victims may take and which pods
are left out meanwhile is ``room_attempts``'s. Refused gangs are swept once a second besides, highest priority
first: kube-scheduler does not call the extender for a pod its own filters find no room for.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from enum import Enum

from placement.preemption import Preemption, greedy_preemption, plan_preemption
from placement.request import ClusterView, SolveOptions, Status
from scheduler.extender.coordinator.eligibility_cache import EligibilityCache
from scheduler.extender.coordinator.evictions import EvictionOrder, Evictor, Note
from scheduler.extender.coordinator.gang_state import GangState, PlanBasis, PlanCommit
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangMembers, GangRef, gang_members, gang_ref_of
from scheduler.extender.coordinator.metrics import CoordinatorMetrics
from scheduler.extender.coordinator.room_attempts import RoomAttempts
from scheduler.extender.coordinator.solving import Solver, Translated, free_capacity, translate
from scheduler.extender.coordinator.topology_cache import TopologyCache
from scheduler.extender.coordinator.victims import Candidates, gather, priority_of
from scheduler.extender.state.store import ClusterStore
from scheduler.extender.translation.gang_request import GangRequestError
from scheduler.extender.translation.priority import GangPriority, gang_priority

__all__ = ["Room", "RoomMaker", "RoomSettings"]

log = logging.getLogger(__name__)

_REFUSED = (GangState.WAITING, GangState.INFEASIBLE)
_SWEEP_LIMIT = 4  # attempts per sweep, highest priority first: each may solve for up to the time limit


@dataclass(frozen=True)
class RoomSettings:
    evict: bool = True  # False: reservations may still yield, nothing is evicted (``serve --no-preemption``)
    wait_seconds: float = 120.0  # victims must be gone within this, or the preemption is given up
    backoff_seconds: float = 30.0  # least time between two preemptions of one gang
    retry_seconds: float = 10.0  # a fruitless attempt is made again after this even if nothing it read changed
    exclude_seconds: float = 300.0  # how long a pod that would not go stays out of later attempts
    # How victims are chosen: "cpsat" (the victim model, never costlier than the greedy) or "kai-greedy" (the
    # KAI-like baseline, for the benchmark's comparison).
    policy: str = "cpsat"


class Room(Enum):
    """What an attempt did: MADE (a plan committed: Planned, or Preempting while its victims go), NONE (nothing
    below the gang makes room, or it was not tried), FITS (it fits as things are: plan it the usual way)."""

    MADE = "made"
    NONE = "none"
    FITS = "fits"


@dataclass(frozen=True)
class _Attempt:
    ref: GangRef
    basis: PlanBasis
    gang: Translated
    priority: GangPriority
    memo: tuple[int, ...]


class RoomMaker:
    def __init__(
        self,
        *,
        store: ClusterStore,
        table: GangTable,
        solver: Solver,
        evictor: Evictor,
        options: SolveOptions,
        settings: RoomSettings,
        window: Callable[[int], float],
        metrics: CoordinatorMetrics,
        clock: Callable[[], float],
        topologies: TopologyCache,
        eligibility: EligibilityCache,
    ) -> None:
        self._store = store
        self._table = table
        self._solver = solver
        self._evictor = evictor
        self._options = options
        self.settings = settings
        self._window = window
        self._metrics = metrics
        self._clock = clock
        self._topologies = topologies
        self._eligibility = eligibility
        self.attempts = RoomAttempts(
            retry_seconds=settings.retry_seconds,
            backoff_seconds=settings.backoff_seconds,
            exclude_seconds=settings.exclude_seconds,
        )
        self._floor: tuple[float, int] = (-1e18, 2**62)  # (when read, the lowest priority that could make way)
        self._swept = -1e18

    def try_for(self, ref: GangRef) -> Room:
        """Make room for the gang if it was refused and something below it can make way."""
        attempt = self._attempt(ref)
        if attempt is None:
            return Room.NONE
        now = self._clock()
        candidates = gather(
            store=self._store,
            table=self._table,
            preemptor=ref,
            priority=attempt.priority.value,
            evict=self.settings.evict and attempt.priority.preempts,
            useful=_useful(attempt.gang),
            excluded=self.attempts.excluded(now=now),
        )
        found, view = self._plan(attempt, candidates.reserved_only())
        if found.status is not Status.PLACED and candidates.running:
            found, view = self._plan(attempt, candidates)
        if found.status is not Status.PLACED:
            self._metrics.preemptions.labels("none").inc()
            log.info("no room made gang=%s priority=%d reason=%s", ref.key, attempt.priority.value, found.reason)
            self.attempts.fruitless(ref.key, attempt.memo, now=now)
            return Room.NONE
        used = set(found.assignment.values())
        coming = any(node in used for node in candidates.terminating.values())
        if not (found.evicted or found.yielded or coming):
            return Room.FITS
        found = self._placed_best(attempt, view, candidates, found)
        return Room.MADE if self._commit(attempt, candidates, found, now=now) else Room.NONE

    def sweep(self, try_for: Callable[[GangRef], Room]) -> None:
        """Try again, through ``try_for``, for every refused gang that may preempt something (the planner's tick).
        kube-scheduler does not call the extender for a pod no node has room for (its own filters refuse them all
        first), so a refused gang would otherwise wait for news that nothing sends: a lower-priority gang bound
        since, or planned, is a victim now."""
        now = self._clock()
        if now - self._swept < 1.0:
            return  # the planner's tick follows every batch of work: a sweep per second is enough
        self._swept = now
        refused = self._table.refused()
        if not refused:
            return
        floor = self._lowest_below()
        ranked = sorted(
            ((priority, ref) for ref in refused if (priority := priority_of(self._store, ref)) is not None),
            key=lambda item: (-item[0], item[1].key),
        )
        tried = 0
        for priority, ref in ranked:
            if priority <= floor or tried == _SWEEP_LIMIT:
                break
            outcome = try_for(ref)
            tried += outcome is not Room.NONE or self.attempts.just_tried(ref.key, now=self._clock())

    def check(self) -> None:
        """Give up preemptions whose victims did not go in time (the planner's tick)."""
        now = self._clock()
        waiting = [gang for gang in self.attempts.under_way() if self._table.awaiting(gang)]
        for gang in self.attempts.due(now=now, waiting=waiting):
            stuck = self._table.awaiting(gang)
            if not stuck:
                continue
            self.attempts.exclude(stuck, now=now)
            names = ", ".join(sorted(stuck)[:5])
            reason = (
                f"gave up preempting: {len(stuck)} pod(s) evicted for this gang did not go within "
                f"{self.settings.wait_seconds:g}s ({names}); planned again without them"
            )
            self._abandon(gang, reason)

    def refused(self, ref: GangRef, reason: str, pods: Sequence[str]) -> None:
        """A PodDisruptionBudget refused a victim at the dry run: nothing was evicted. The preemption is given up
        and the gang planned again without that pod (or its gang) for a while."""
        self.attempts.refused(ref.key, pods, now=self._clock())
        self._abandon(ref.key, f"preemption refused, nothing evicted: {reason}")

    def reset(self) -> None:
        """Leadership changed: nothing decided before holds."""
        self.attempts.reset()

    # --- internals ---------------------------------------------------------------------------------------------

    def _attempt(self, ref: GangRef) -> _Attempt | None:
        summary = self._table.summary(ref.key)
        if summary is None or summary.state not in _REFUSED or summary.gathering or self._table.started(ref.key):
            return None
        now = self._clock()
        basis = self._table.planning_basis(ref, now=now)
        memo = _memo(basis, self._store)  # read before the members: news after it makes the next attempt go ahead
        if not self.attempts.may_try(ref.key, memo, now=now):
            return None
        members = gang_members(self._store, ref)
        if isinstance(members, str) or _under_way(members):
            return None
        try:
            gang = translate(
                members=members, facts={}, excluded=basis.excluded, store=self._store, eligibility=self._eligibility
            )
        except GangRequestError:
            return None  # not plannable as it stands (members missing, gated, a malformed PodGang)
        if not gang.request.groups:
            return None
        pods = (pod for group in members.groups for pod in group.pods)
        return _Attempt(ref, basis, gang, gang_priority(members.podgang, pods, self._store), memo)

    def _plan(self, attempt: _Attempt, candidates: Candidates) -> tuple[Preemption, ClusterView]:
        free = free_capacity(
            store=self._store, reserved=attempt.basis.reserved_elsewhere, coming=candidates.coming_free
        )
        view = ClusterView(topology=self._topologies.get(self._store), free=free)
        choose = greedy_preemption if self.settings.policy == "kai-greedy" else plan_preemption
        found = choose(
            attempt.gang.request, view, candidates.victims, candidates.gangs, self._options, budgets=candidates.budgets
        )
        self._metrics.solve_seconds.observe(found.solve_seconds)
        return found, view

    def _placed_best(
        self, attempt: _Attempt, view: ClusterView, candidates: Candidates, found: Preemption
    ) -> Preemption:
        """The victim model's assignment is one the freed room allows, not the best placement on it: place the gang
        again on what is free once the chosen victims are gone (its best-effort pods too, where they fit)."""
        yielded = set(found.yielded)
        chosen = set(found.evicted) | {v.key for v in candidates.victims if v.gang in yielded}
        free = {node: dict(units) for node, units in view.free.items()}
        for victim in candidates.victims:
            if victim.key in chosen and victim.node in free:
                for resource, units in victim.demand.items():
                    if resource in free[victim.node]:
                        free[victim.node][resource] += units
        placed = self._solver(attempt.gang.request, ClusterView(topology=view.topology, free=free), self._options)
        if placed.status is not Status.PLACED:
            return found
        return replace(found, assignment=placed.assignment, placement_score=placed.placement_score)

    def _commit(self, attempt: _Attempt, candidates: Candidates, found: Preemption, *, now: float) -> bool:
        ref, priority = attempt.ref, attempt.priority.value
        because = f"PodGang {ref.key} (priority {priority})" if not ref.solo else f"pod {ref.namespace}/{ref.name}"
        notes: list[Note] = []
        for key in found.yielded:
            gang = candidates.reserved[key]
            reason = f"gave its reservations to {because}; planned again when capacity frees"
            if not self._table.yielded(key, reason=reason):
                return False  # it started binding meanwhile: the next attempt sees that
            if not gang.solo and (podgang := self._store.podgang(key)) is not None:
                notes.append(Note(gang.namespace, "PodGang", gang.name, podgang.metadata.uid, "Yielded", reason))
        used = set(found.assignment.values())
        awaiting = {key: candidates.running[key].node for key in found.evicted}
        awaiting.update({pod: node for pod, node in candidates.terminating.items() if node in used})
        pending = sum(len(group.pods) for group in attempt.gang.request.groups)
        commit = PlanCommit(
            assignment=dict(found.assignment),
            kept={},
            demands=attempt.gang.demands,
            groups=attempt.gang.groups,
            min_replicas=attempt.gang.min_replicas,
            bound={},
            placement_score=found.placement_score,
            ttl_seconds=self._window(pending) + (self.settings.wait_seconds if awaiting else 0.0),
        )
        if awaiting:
            installed = self._table.preempting(ref, commit=commit, basis=attempt.basis, awaiting=awaiting, now=now)
        else:
            installed = self._table.planned(ref, commit=commit, basis=attempt.basis, now=now)
        if not installed:
            return False
        podgang = self._store.podgang(ref.key)
        victims = tuple(candidates.running[key] for key in found.evicted)
        if victims and podgang is not None:
            cost = found.cost
            notes.append(
                Note(
                    ref.namespace,
                    "PodGang",
                    ref.name,
                    podgang.metadata.uid,
                    "Preempting",
                    f"evicting {len(victims)} pod(s) of {cost.victim_gangs} lower-priority gang(s) "
                    f"(highest priority {cost.victim_priority}, {cost.victim_gpus} GPUs) to place this gang whole",
                )
            )
        deadline = now + self.settings.wait_seconds if awaiting else None
        self.attempts.committed(ref.key, now=now, deadline=deadline)
        self._metrics.preemptions.labels("evicting" if victims else "yielded").inc()
        log.info(
            "made room gang=%s priority=%d yielded=%s evicted=%d victim_gpus=%d awaiting=%d",
            ref.key,
            priority,
            ",".join(found.yielded) or "-",
            len(victims),
            found.cost.victim_gpus,
            len(awaiting),
        )
        whole = _whole(found.evicted, candidates)
        if victims:
            self._evictor.order(EvictionOrder(ref, victims, whole, because, tuple(notes)))
        elif notes:
            self._evictor.note(ref, notes)
        return True

    def _abandon(self, gang: str, reason: str) -> None:
        summary = self._table.summary(gang)
        self._table.preemption_abandoned(gang, reason=reason)
        self._metrics.preemptions.labels("abandoned").inc()
        log.warning("preemption abandoned gang=%s reason=%s", gang, reason)
        ref = summary.ref if summary is not None else None
        podgang = self._store.podgang(gang) if ref is not None and not ref.solo else None
        if ref is not None and podgang is not None:
            note = Note(
                ref.namespace, "PodGang", ref.name, podgang.metadata.uid, "PreemptionAbandoned", reason, "Warning"
            )
            self._evictor.note(ref, [note])

    def _lowest_below(self) -> int:
        """The lowest priority of anything that could make way (bound pods, reservations), read at most once a
        second, each gang once: a refused gang at or below it has nothing to preempt, and is not tried."""
        now = self._clock()
        if now - self._floor[0] < 1.0:
            return self._floor[1]
        gangs = {gang_ref_of(p) for p in self._store.pods() if p.spec.nodeName}
        gangs.update(ref for ref, _ in self._table.reserved_gangs())
        values = [priority_of(self._store, ref) for ref in gangs]
        values.append(self._store.lowest_foreign_priority())
        self._floor = (now, min((v for v in values if v is not None), default=2**62))
        return self._floor[1]


def _memo(basis: PlanBasis, store: ClusterStore) -> tuple[int, ...]:
    """What a fruitless attempt read: the gang's members, freed capacity, plans committed, pods placed."""
    return (basis.structure, basis.news, basis.epoch, basis.plans, store.placements)


def _under_way(members: GangMembers) -> bool:
    """Members bound already: the gang is repaired around them, not given room by preemption."""
    return any(group.bound() for group in members.groups)


def _useful(gang: Translated) -> Collection[str] | None:
    """The nodes the gang could run on at all (``None``: any)."""
    sets = [group.eligible for group in gang.request.groups]
    if any(eligible is None for eligible in sets):
        return None
    return frozenset().union(*(eligible for eligible in sets if eligible is not None))


def _whole(evicted: Sequence[str], candidates: Candidates) -> tuple[GangRef, ...]:
    """The PodGangs every running member of which is evicted."""
    chosen = set(evicted)
    members: dict[str, list[str]] = {}
    refs: dict[str, GangRef] = {}
    for key, victim in candidates.running.items():
        if victim.podgang is not None:
            members.setdefault(victim.gang, []).append(key)
            refs[victim.gang] = victim.podgang
    return tuple(refs[gang] for gang, pods in sorted(members.items()) if all(pod in chosen for pod in pods))
