"""``Coordinator``: the gang lifecycle behind ``api.service.Extender``; a thin layer over the parts it wires.

filter → ``decisions.decide_filter`` on the member's view (re-planning first when it says so); prioritize → the
planned node 10, others 0; bind → ``binding`` (ready members, the release); preempt → the gang guard
(``preemption``). Every change of a gang's state is a ``GangTable`` transition. Plans are made ahead by the
background worker when the store says a gang became plannable, and on a filter otherwise; a gang refused for room
then has lower-priority work make way for it where it can (``making_room``, ``evictions``), in the background too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry

from api.core import NodeList
from api.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
    MetaPod,
    MetaVictims,
)
from placement.request import SolveOptions
from scheduler.extender.cluster_writer import ClusterWriter
from scheduler.extender.coordinator.answers import capped, failed_nodes
from scheduler.extender.coordinator.binding import Binder
from scheduler.extender.coordinator.decisions import (
    Accept,
    FilterDecision,
    Refuse,
    Replan,
    ReplanCause,
    Retry,
    decide_filter,
)
from scheduler.extender.coordinator.events import StoreEvents
from scheduler.extender.coordinator.evictions import Evictor
from scheduler.extender.coordinator.gang_state import PodFacts
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.gathering import ArrivalRate, GatherWindow
from scheduler.extender.coordinator.making_room import RoomSettings
from scheduler.extender.coordinator.members import GangRef, gang_ref_of
from scheduler.extender.coordinator.metrics import CoordinatorMetrics
from scheduler.extender.coordinator.nominations import Nominator
from scheduler.extender.coordinator.planning import Planner
from scheduler.extender.coordinator.preemption import vetoed_nodes
from scheduler.extender.coordinator.release import Releaser
from scheduler.extender.coordinator.reporting import PodGangStatusReporter
from scheduler.extender.coordinator.solving import Solver
from scheduler.extender.coordinator.topology_cache import TopologyCache
from scheduler.extender.coordinator.waiters import BindWaiters, Timer
from scheduler.extender.coordinator.work import WorkQueue
from scheduler.extender.leadership import AlwaysLeader, Leadership
from scheduler.extender.state.store import ClusterStore
from topology import Level

__all__ = ["Blocking", "Coordinator", "CoordinatorConfig", "utc_now"]

log = logging.getLogger(__name__)

T = TypeVar("T")

NOT_LEADER = "grove-extender: this replica is a standby (not the leader); kube-scheduler will retry"
NOT_SYNCED = "grove-extender: still listing the cluster (nodes, pods, PodGangs); kube-scheduler will retry"
STALE = "grove-extender: its view of the cluster is stale ({why}); kube-scheduler will retry"

Blocking = Callable[..., Awaitable[Any]]
"""Runs a blocking call (a plan) without blocking the event loop: ``asyncio.to_thread``, or inline in a simulation."""


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class CoordinatorConfig:
    # Well under kube-scheduler's extender httpTimeout (5 s as shipped): long enough for a small gang's members to
    # arrive one scheduling cycle apart and be bound in the call, short enough never to time out on its side.
    bind_wait_seconds: float = 2.0
    # What any gang's reservation lives at least; it grows with the gang and kube-scheduler's pace (``gathering``).
    reservation_ttl_seconds: float = 60.0
    # How long a node kube-scheduler's own filters refused stays out of a group's plans.
    exclusion_seconds: float = 60.0
    solve: SolveOptions = field(default_factory=SolveOptions)
    # A queue head's CP-SAT model searches this long at most (None: ``solve``'s limit). Such a model starts from a
    # valid greedy plan that missed the head's lower bound and the planner thread waits for it. A shorter search
    # frees the planner and the CPU sooner but packs worse: on users' queue it left a large gang without the
    # block the longer plans kept for it (``bench_e2e --real --mix [--live]``, docs/bench_e2e.md). GPUs left
    # idle cost the cluster more than the planner's time does, so the default keeps the full limit.
    head_time_limit_seconds: float | None = None
    # Gangs waiting for a first placement planned together, the first K by priority then age (``head``); 1 plans
    # one gang at a time.
    batch_size: int = 16
    # Write each planned pod's nominatedNodeName (``nominations``): kube-scheduler then tries that node alone.
    nominate: bool = True
    # Gang priority and preemption (``making_room``): reservations of lower-priority gangs yield, lower-priority
    # pods are evicted (unless ``evict`` is off), within the deadlines it names.
    room: RoomSettings = field(default_factory=RoomSettings)


class Coordinator:
    """Implements ``api.service.Extender`` over a ``ClusterStore``; writes go through a ``ClusterWriter``."""

    def __init__(
        self,
        *,
        store: ClusterStore,
        writer: ClusterWriter,
        solver: Solver,
        leadership: Leadership | None = None,
        config: CoordinatorConfig | None = None,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = utc_now,
        timer: Timer = asyncio.sleep,
        blocking: Blocking = asyncio.to_thread,
        levels: Sequence[Level] | None = None,
    ) -> None:
        self.config = config or CoordinatorConfig()
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = CoordinatorMetrics(self.registry)
        self.store = store
        self.table = GangTable()
        self.work = WorkQueue()
        self.rate = ArrivalRate()
        self._gather = GatherWindow(base_seconds=self.config.reservation_ttl_seconds)
        self._leadership = leadership or AlwaysLeader()
        self._leading_before = False
        self._resynced = False  # every PodGang queued for planning since we lead on a synced store
        self._clock = clock
        self._blocking = blocking
        self._liveness: dict[str, Callable[[], bool]] = {}
        self._freshness: list[Callable[[], str | None]] = []
        self._stale_said: str | None = None  # the last staleness logged, so a lasting one is logged once
        self.evictor = Evictor(
            store=store,
            table=self.table,
            writer=writer,
            work=self.work,
            metrics=self.metrics,
            may_write=lambda: self._unready() is None,
            refused=lambda ref, reason, pods: self.planner.room.refused(ref, reason, pods),
            wall_clock=wall_clock,
        )
        self.planner = Planner(
            store=store,
            table=self.table,
            solver=solver,
            options=self.config.solve,
            head_options=replace(
                self.config.solve,
                time_limit_seconds=self.config.head_time_limit_seconds or self.config.solve.time_limit_seconds,
            ),
            window=self._plan_window,
            metrics=self.metrics,
            clock=clock,
            topologies=TopologyCache(levels),
            evictor=self.evictor,
            room=self.config.room,
            batch_size=self.config.batch_size,
        )
        self.waiters = BindWaiters(timer=timer)
        self.releaser = Releaser(
            store=store,
            table=self.table,
            writer=writer,
            waiters=self.waiters,
            metrics=self.metrics,
            replan=lambda ref: self.work.put(("plan", ref)),
            timer=timer,
        )
        self.binder = Binder(
            store=store,
            table=self.table,
            releaser=self.releaser,
            waiters=self.waiters,
            metrics=self.metrics,
            clock=clock,
            wait_seconds=self.config.bind_wait_seconds,
            window=self._window,
            pace=lambda: max(self.rate.per_second(self._clock()), self._gather.min_rate),
        )
        self.reporter = PodGangStatusReporter(
            store=store, table=self.table, writer=writer, work=self.work, wall_clock=wall_clock
        )
        self.nominator = Nominator(
            store=store,
            table=self.table,
            writer=writer,
            metrics=self.metrics,
            may_write=lambda: self._unready() is None,
        )
        if self.config.nominate:
            self.table.subscribe_plans(lambda ref: self.work.put(("nominate", ref)))
        self.events = StoreEvents(store=store, table=self.table, work=self.work, waiters=self.waiters, clock=clock)
        store.subscribe(self.events.on_change)
        self.metrics.watch_state(
            gangs_by_state=self.table.counts_by_state,
            reservations=self.table.reservation_count,
            watch_events=store.events_applied,
        )
        self._answers = {answer: self.metrics.filter_answers.labels(answer) for answer in ("node", "refused", "error")}
        self._nominated = {seen: self.metrics.filter_nominations.labels(seen) for seen in ("alone", "scanned", "none")}

    # --- Extender verbs ----------------------------------------------------------------------------------------

    async def filter(self, args: ExtenderArgs) -> ExtenderFilterResult:
        self.rate.observe(self._clock())  # kube-scheduler's pace: how fast a gang's members can reach us
        self.store.attempted(args.Pod.key)  # where kube-scheduler queues it again if this attempt fails
        candidates = args.candidate_names()
        nominated = args.Pod.status.nominatedNodeName
        self._nominated["none" if not nominated else "alone" if candidates == [nominated] else "scanned"].inc()
        if (unready := self._unready()) is not None:
            self._answers["error"].inc()
            return ExtenderFilterResult(Error=unready)
        stored = self.store.pod(args.Pod.key)
        ref = gang_ref_of(stored) if stored is not None else None
        decision = self._decide(args, ref, candidates) if ref is None else await self._filter(args, ref, candidates)
        answer = "node" if isinstance(decision, Accept) else "error" if isinstance(decision, Retry) else "refused"
        self._answers[answer].inc()
        return _encode(args, candidates, decision)

    async def _filter(self, args: ExtenderArgs, ref: GangRef, candidates: list[str]) -> FilterDecision:
        """The decision for a member of a gang, and what it sets going: a ``Replan`` is made (its transition, then
        a plan) and decided again; a refusal while a plan is under way waits for that plan (it may lift it); a
        ready member of a gang complete by other means starts the release; a refusal asks whether lower-priority
        work may make way (the planner thread looks)."""
        key = args.Pod.key
        decision = self._decide(args, ref, candidates)
        if isinstance(decision, Replan):
            reason = await self._replan(ref, key, decision)
            decision = self._decide(args, ref, candidates)
            if isinstance(decision, Replan):
                decision = Refuse(reason or f"gang {ref.key}: pod {key} has no place in the current plan")
        elif isinstance(decision, Refuse) and self.planner.busy(ref.key):
            # A plan under way (the background worker's) may be about to lift this refusal: kube-scheduler would
            # park the pod for a while on a stale answer. Wait for it and answer what it decided.
            await self._blocking(self.planner.plan, ref)
            decision = self._decide(args, ref, candidates)
            if isinstance(decision, Replan):
                decision = Refuse(f"gang {ref.key}: pod {key} has no place in the current plan")
        if isinstance(decision, Retry):
            member = self.table.member(ref.key, key)
            if member is not None and member.ready and member.complete:
                self.releaser.start(ref)  # completed by something other than a bind call (e.g. a lowered minimum)
        if isinstance(decision, Refuse):
            self.work.put(("preempt", ref))
        return decision

    async def prioritize(self, args: ExtenderArgs) -> Sequence[HostPriority]:
        if self._unready() is not None:
            return []  # no scores: kube-scheduler's own decide, and our filter told it to retry anyway
        stored = self.store.pod(args.Pod.key)
        member = self.table.member(gang_ref_of(stored).key, args.Pod.key) if stored is not None else None
        planned = member.planned if member is not None else None
        return [HostPriority(Host=name, Score=10 if name == planned else 0) for name in args.candidate_names()]

    async def bind(self, args: ExtenderBindingArgs) -> ExtenderBindingResult:
        if (unready := self._unready()) is not None:
            return ExtenderBindingResult(Error=unready)
        result = await self.binder.bind(args)
        return ExtenderBindingResult(Error=capped(result.Error))

    async def preempt(self, args: ExtenderPreemptionArgs) -> ExtenderPreemptionResult:
        if self._unready() is not None:
            return ExtenderPreemptionResult()  # proposing nothing preempts nothing: it can never break a gang
        stored = self.store.pod(args.Pod.key)
        if stored is not None and not gang_ref_of(stored).solo and self.store.offered(stored):
            # A member of a gang we place: the extender makes room for the gang as a whole (``making_room``);
            # kube-scheduler's per-pod proposal would free one pod's room and evict for the same gang twice.
            self.work.put(("preempt", gang_ref_of(stored)))
            return ExtenderPreemptionResult()
        proposal = args.victim_uids()
        vetoes = vetoed_nodes(proposal, store=self.store, preemptor=args.Pod.spec.priority or 0)
        for node, reason in vetoes.items():
            self.metrics.preemption_vetoes.inc()
            log.info("preemption vetoed preemptor=%s node=%s reason=%s", args.Pod.key, node, reason)
        return ExtenderPreemptionResult(
            NodeNameToMetaVictims={
                node: MetaVictims(Pods=[MetaPod(UID=uid) for uid in uids], NumPDBViolations=_pdb(args, node))
                for node, uids in proposal.items()
                if node not in vetoes
            }
        )

    def add_liveness(self, name: str, probe: Callable[[], bool]) -> None:
        """``healthy`` fails while ``probe`` does (the planner thread, the watches)."""
        self._liveness[name] = probe

    def healthy(self) -> bool:
        dead = [name for name, probe in self._liveness.items() if not probe()]
        if dead:
            log.error("not healthy dead=%s", ",".join(dead))
        return not dead

    def add_freshness(self, probe: Callable[[], str | None]) -> None:
        """``ready`` fails, and the verbs and the planner stand still, while ``probe`` says what is stale (the
        watches that keep failing)."""
        self._freshness.append(probe)

    def ready(self) -> bool:
        # The view's freshness first, whatever else is wrong: a standby, or a leader that lost its Lease in the same
        # outage, still says (and logs) that its view is stale, so an operator is told what the probe fails for.
        stale = self._stale()
        return self.store.synced and self._leadership.is_leader() and stale is None

    def _stale(self) -> str | None:
        why = next((found for probe in self._freshness if (found := probe()) is not None), None)
        if why != self._stale_said:
            if why is not None:
                log.warning("view stale: not ready, acting on nothing why=%s", why)
            else:
                log.warning("view fresh again: ready")
            self._stale_said = why
        return why

    def _unready(self) -> str | None:
        """Why the verbs and the planner must not act now, if they must not: a standby, a store still listing, or
        a view gone stale (watches failing). A store without its nodes makes every gang look infeasible, and
        kube-scheduler parks a pod refused on every node for up to 5 minutes; an ``Error`` is retried within 1-10
        s. A stale view may place a gang on a node that is gone or full and bind part of it there. (Once the store
        is synced, ``leading`` queues every PodGang for planning, so nothing skipped here is lost; a stale kind
        catches up when its watch comes back, and each change it brings is news to the gangs it touches.)"""
        if not self.leading():
            return NOT_LEADER
        if not self.store.synced:
            return NOT_SYNCED
        why = self._stale()
        return None if why is None else STALE.format(why=why)

    def debug_gangs(self) -> Sequence[Mapping[str, Any]]:
        return self.table.describe(now=self._clock())

    # --- the background worker's entry points ------------------------------------------------------------------

    def plan_ahead(self, ref: GangRef) -> None:
        """Plan the gang now if it has no usable decision and kube-scheduler will offer us its pods: a gang whose
        pods another scheduler places must not hold capacity our pods could use. Refused for room, it may then
        have lower-priority work make way for it."""
        if self._unready() is None and self._offered(ref):
            self.planner.plan(ref)
            self.planner.make_room(ref)

    def preempt_ahead(self, ref: GangRef) -> None:
        """Let lower-priority work make way for a gang filter refused (the background worker calls this)."""
        if self._unready() is None and self._offered(ref):
            self.planner.make_room(ref)

    def expire(self) -> list[str]:
        """Give back the reservations of gangs that stopped gathering; the next filter re-plans them."""
        if self._unready() is None:
            self.planner.room.check()
            self.planner.sweep_refused()
        expired = self.table.expire(self._clock())
        for gang in expired:
            self.metrics.reservations_expired.inc()
            log.info("reservation expired gang=%s", gang)
        return expired

    def leading(self) -> bool:
        """Whether this replica leads now. On any change of leadership everything but the API's state is dropped:
        another leader may have acted meanwhile."""
        leading = self._leadership.is_leader()
        if leading != self._leading_before:
            self._leading_before = leading
            self._resynced = False
            ready = self.table.leadership_changed()
            self.planner.room.reset()
            self.evictor.reset()
            self.waiters.answer(ready, NOT_LEADER)
            log.info("leadership changed leading=%s", leading)
        if leading and not self._resynced and self.store.synced:
            # Once leading on a synced store, start from every PodGang the API shows: plans queued while we did not
            # lead were skipped, and ones queued while the watches listed may have met a PodGang before its pods
            # (a gang bound whole just before a restart was then never looked at again, and kept no status).
            self._resynced = True
            for podgang in self.store.podgangs():
                self.work.put(("plan", GangRef(podgang.metadata.namespace, podgang.metadata.name)))
            # After the plans: the planning thread takes both in order, so each adopted gang is synced against the
            # plan it was just given, or none.
            for ref in self.nominator.adopt(self.store.pods()):
                self.work.put(("nominate", ref))
        return leading

    # --- internals ---------------------------------------------------------------------------------------------

    def _offered(self, ref: GangRef) -> bool:
        if not ref.solo:
            return self.store.gang_offered(ref.key)
        pod = self.store.pod(f"{ref.namespace}/{ref.name}")
        return pod is not None and self.store.offered(pod)

    def _window(self, members: int) -> float:
        return self._gather.seconds(members=members, rate=self.rate.per_second(self._clock()))

    def _plan_window(self, members: int) -> float:
        """A plan's window: its members, after every pod already reserved (planned in the queue's order, before
        it: kube-scheduler reaches them first)."""
        now = self._clock()
        return self._gather.seconds(
            members=members, rate=self.rate.per_second(now), ahead=self.table.reservation_count()
        )

    def _decide(self, args: ExtenderArgs, ref: GangRef | None, candidates: list[str]) -> FilterDecision:
        key = args.Pod.key
        return decide_filter(
            key=key,
            request_uid=args.Pod.metadata.uid,
            nominated=args.Pod.status.nominatedNodeName,
            pod=PodFacts.of(self.store, key),
            member=self.table.member(ref.key, key) if ref is not None else None,
            candidates=candidates,
            fits=self._fits,
            now=self._clock(),
        )

    async def _replan(self, ref: GangRef, key: str, decision: Replan) -> str | None:
        if decision.cause is ReplanCause.NODE_REFUSED and decision.node is not None:
            until = self._clock() + self.config.exclusion_seconds
            self.table.node_refused(ref.key, key, node=decision.node, until=until)
        elif decision.cause is ReplanCause.CLUSTER_CHANGED:
            self.table.unplanned(ref.key, [key])
        if decision.cause in (ReplanCause.NODE_REFUSED, ReplanCause.CLUSTER_CHANGED):
            self.metrics.replans.labels(str(decision.cause)).inc()
        force = decision.cause is not ReplanCause.STALE
        reason: str | None = await self._blocking(self.planner.plan, ref, force=force, for_pod=key)
        return reason

    def _fits(self, node: str) -> bool:
        """Bound pods + every reservation on the node within its allocatable (a foreign bind may break it)."""
        stored = self.store.node(node)
        if stored is None or stored.spec.unschedulable:
            return False
        return self.table.fits(node, used=self.store.used_on(node), allocatable=self.store.allocatable_of(node))


def _encode(args: ExtenderArgs, candidates: list[str], decision: FilterDecision) -> ExtenderFilterResult:
    if isinstance(decision, Accept):
        if args.NodeNames is not None:
            return ExtenderFilterResult(NodeNames=[decision.node])
        items = [item for item in args.Nodes.items if item.name == decision.node] if args.Nodes is not None else []
        return ExtenderFilterResult(Nodes=NodeList(items=items))
    if isinstance(decision, Retry):
        return ExtenderFilterResult(Error=capped(decision.reason))
    reason = decision.reason if isinstance(decision, Refuse) else "no plan"
    failed = failed_nodes(candidates, reason)
    if args.NodeNames is not None:
        return ExtenderFilterResult(NodeNames=[], FailedNodes=failed)
    return ExtenderFilterResult(Nodes=NodeList(items=[]), FailedNodes=failed)


def _pdb(args: ExtenderPreemptionArgs, node: str) -> int:
    if args.NodeNameToMetaVictims is not None and node in args.NodeNameToMetaVictims:
        return args.NodeNameToMetaVictims[node].NumPDBViolations
    if args.NodeNameToVictims is not None and node in args.NodeNameToVictims:
        return args.NodeNameToVictims[node].NumPDBViolations
    return 0
