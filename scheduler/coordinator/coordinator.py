"""``Coordinator``: the gang lifecycle behind ``api.service.Extender``.

filter → the member's planned node, or the gang's reason on every node; prioritize → planned node 10, others 0;
bind → the barrier (``binding``); preempt → the gang guard (``preemption``). Plans are made ahead in a background
thread when the store says a gang became plannable, and on the first filter otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry

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
from api.kube import NodeList
from placement.request import SolveOptions
from scheduler.cluster_writer import ClusterWriter
from scheduler.coordinator.barrier import Timer
from scheduler.coordinator.binding import Binder, utc_now
from scheduler.coordinator.events import StoreEvents
from scheduler.coordinator.ledger import GangState, Ledger
from scheduler.coordinator.members import GangRef, gang_ref_of
from scheduler.coordinator.metrics import CoordinatorMetrics
from scheduler.coordinator.planner import Solver
from scheduler.coordinator.planning import Planner, PlanningConfig
from scheduler.coordinator.preemption import vetoed_nodes
from scheduler.coordinator.reservations import ReservationBook
from scheduler.coordinator.topology_cache import TopologyCache
from scheduler.leadership import AlwaysLeader, Leadership
from scheduler.state.store import ClusterStore
from topology import Level

__all__ = ["Coordinator", "CoordinatorConfig"]

log = logging.getLogger(__name__)

NOT_LEADER = "grove-extender: this replica is a standby (not the leader); kube-scheduler will retry"


@dataclass(frozen=True)
class CoordinatorConfig:
    # Below kube-scheduler's extender httpTimeout (we ship 5 s): a bind answered Error is retried, a bind that
    # times out on kube-scheduler's side leaves it unsure. 4 s is room for ~800 members to pass filter at the
    # ~200 pods/s kube-scheduler reaches with an extender; raise both together for larger gangs.
    barrier_timeout_seconds: float = 4.0
    reservation_ttl_seconds: float = 60.0
    solve: SolveOptions = field(default_factory=SolveOptions)


@dataclass(frozen=True)
class _Decision:
    node: str | None = None
    reason: str = ""
    replan: bool = False
    force: bool = False  # the plan itself is wrong (not merely missing or stale): re-plan even if it looks current


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
        barrier_timer: Timer = asyncio.sleep,
        levels: Sequence[Level] | None = None,
    ) -> None:
        self.config = config or CoordinatorConfig()
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = CoordinatorMetrics(self.registry)
        self.ledger = Ledger()
        self.store = store
        self._leadership = leadership or AlwaysLeader()
        self._leading_before = False
        self._clock = clock
        self.planner = Planner(
            store=store,
            ledger=self.ledger,
            solver=solver,
            config=PlanningConfig(reservation_ttl_seconds=self.config.reservation_ttl_seconds, solve=self.config.solve),
            metrics=self.metrics,
            clock=clock,
            topologies=TopologyCache(levels),
        )
        self.binder = Binder(
            store=store,
            ledger=self.ledger,
            writer=writer,
            metrics=self.metrics,
            clock=clock,
            wall_clock=wall_clock,
            barrier_timeout_seconds=self.config.barrier_timeout_seconds,
            reservation_ttl_seconds=self.config.reservation_ttl_seconds,
            barrier_timer=barrier_timer,
        )
        self.events = StoreEvents(store=store, ledger=self.ledger, planner=self.planner, writer=writer)
        store.subscribe(self.events.on_change)
        self.metrics.watch_state(gangs_by_state=self.ledger.counts_by_state, reservations=self._reservation_count)

    # --- Extender verbs ----------------------------------------------------------------------------------------

    async def filter(self, args: ExtenderArgs) -> ExtenderFilterResult:
        candidates = args.candidate_names()
        if not self.leading():
            return ExtenderFilterResult(Error=NOT_LEADER)
        pod = self.store.pod(args.Pod.key) or args.Pod
        if pod.spec.nodeName:
            return _refuse(args, candidates, f"pod {pod.key} is already bound to {pod.spec.nodeName}")
        ref = gang_ref_of(pod)
        decision = self._decide(ref, pod.key, candidates)
        if decision.replan:
            await asyncio.to_thread(self.planner.plan, ref, request_pod=pod, force=decision.force)
            decision = self._decide(ref, pod.key, candidates, may_replan=False)
        if decision.node is None:
            return _refuse(args, candidates, decision.reason)
        return _accept(args, decision.node)

    async def prioritize(self, args: ExtenderArgs) -> Sequence[HostPriority]:
        with self.ledger.lock:
            record = self.ledger.records.get(gang_ref_of(args.Pod).key)
            planned = record.plan.get(args.Pod.key) if record else None
        return [HostPriority(Host=name, Score=10 if name == planned else 0) for name in args.candidate_names()]

    async def bind(self, args: ExtenderBindingArgs) -> ExtenderBindingResult:
        if not self.leading():
            return ExtenderBindingResult(Error=NOT_LEADER)
        return await self.binder.bind(args)

    async def preempt(self, args: ExtenderPreemptionArgs) -> ExtenderPreemptionResult:
        proposal = args.victim_uids()
        vetoes = vetoed_nodes(proposal, store=self.store)
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

    def healthy(self) -> bool:
        return True

    def ready(self) -> bool:
        return self.store.synced and self._leadership.is_leader()

    def debug_gangs(self) -> Sequence[Mapping[str, Any]]:
        now = self._clock()
        with self.ledger.lock:
            return [
                record.describe(
                    now=now,
                    reserved_since=self.ledger.book.created_at(key),
                    waiting=len(self.binder.barrier.waiting(key)),
                )
                for key, record in sorted(self.ledger.records.items())
            ]

    # --- planning ahead ----------------------------------------------------------------------------------------

    def plan(self, ref: GangRef) -> None:
        """Plan the gang now if it has no usable decision (the background worker's entry point)."""
        if self.leading():
            self.planner.plan(ref)

    def leading(self) -> bool:
        """Whether this replica leads now. On any change of leadership the plans and reservations are dropped:
        another leader may have acted meanwhile, and only the API's state (bound pods) carries across terms."""
        leading = self._leadership.is_leader()
        with self.ledger.lock:
            changed = leading != self._leading_before
            self._leading_before = leading
            if changed:
                dropped = len(self.ledger.records)
                self.ledger.records.clear()
                self.ledger.book = ReservationBook()
                self.ledger.epoch += 1
        if changed:
            log.info("leadership changed leading=%s plans_dropped=%d", leading, dropped)
        return leading

    # --- internals ---------------------------------------------------------------------------------------------

    def _decide(self, ref: GangRef, pod_key: str, candidates: list[str], *, may_replan: bool = True) -> _Decision:
        with self.ledger.lock:
            record = self.ledger.records.get(ref.key)
            if record is None:
                return _Decision(replan=may_replan, reason=f"gang {ref.key} could not be planned")
            if record.state in (GangState.WAITING, GangState.INFEASIBLE):
                # A plan in flight (the background worker's) may be about to lift this refusal: planning again
                # waits for it, and the fresh answer is read after.
                changed = record.dirty or record.planning or record.epoch != self.ledger.epoch
                return _Decision(replan=may_replan and changed, reason=record.reason)
            node = record.plan.get(pod_key)
            if node is None:
                # A member that appeared after the plan (or a best-effort extra that did not fit).
                reason = record.reason or f"gang {ref.key}: pod {pod_key} has no place in the current plan"
                return _Decision(replan=may_replan and pod_key not in record.fixed, force=True, reason=reason)
            if node not in candidates:
                group = record.groups.get(pod_key, "")
                until = self._clock() + self.config.reservation_ttl_seconds
                record.excluded.setdefault(group, {})[node] = until
                self.metrics.replans.labels("node_refused").inc()
                return _Decision(
                    replan=may_replan,
                    force=True,
                    reason=f"gang {ref.key}: planned node {node} was refused by kube-scheduler's filters",
                )
            if not self._still_fits(node):
                self.metrics.replans.labels("cluster_changed").inc()
                return _Decision(
                    replan=may_replan, force=True, reason=f"gang {ref.key}: node {node} no longer fits the plan"
                )
            return _Decision(node=node)

    def _still_fits(self, node_name: str) -> bool:
        """Bound pods + every reservation on the node still within its allocatable (a foreign bind may break it)."""
        node = self.store.node(node_name)
        if node is None or node.spec.unschedulable:
            return False
        used = self.store.used_on(node_name)
        reserved = self.ledger.book.reserved_on(node_name)
        allocatable = self.store.allocatable_of(node_name)
        return all(used.get(name, 0) + reserved.get(name, 0) <= allocatable.get(name, 0) for name in {*used, *reserved})

    def _reservation_count(self) -> int:
        with self.ledger.lock:
            return self.ledger.book.count()


def _accept(args: ExtenderArgs, node: str) -> ExtenderFilterResult:
    if args.NodeNames is not None:
        return ExtenderFilterResult(NodeNames=[node])
    items = [item for item in args.Nodes.items if item.name == node] if args.Nodes is not None else []
    return ExtenderFilterResult(Nodes=NodeList(items=items))


def _refuse(args: ExtenderArgs, candidates: list[str], reason: str) -> ExtenderFilterResult:
    failed = dict.fromkeys(candidates, reason)
    if args.NodeNames is not None:
        return ExtenderFilterResult(NodeNames=[], FailedNodes=failed)
    return ExtenderFilterResult(Nodes=NodeList(items=[]), FailedNodes=failed)


def _pdb(args: ExtenderPreemptionArgs, node: str) -> int:
    if args.NodeNameToMetaVictims is not None and node in args.NodeNameToMetaVictims:
        return args.NodeNameToMetaVictims[node].NumPDBViolations
    if args.NodeNameToVictims is not None and node in args.NodeNameToVictims:
        return args.NodeNameToVictims[node].NumPDBViolations
    return 0
