"""The discrete-event loop.

Time advances from event to event: completions first (they free capacity), then arrivals, then one scheduling
pass. Queue discipline is priority, then FIFO, with backfill: waiting gangs are tried highest priority first, then
in arrival order, and a gang that does not fit does not block later ones (no head-of-line reservation, as
kube-scheduler's queue behaves). After a completion every waiting gang is retried; after arrivals only the new ones
are, since capacity only shrank for the others. A cheap necessary check (enough free GPUs on eligible nodes) skips
hopeless tries without asking the policy; it is the same for every policy.

A gang starts once every group has ``minReplicas`` pods bound; best-effort pods still unbound then are dropped.
It runs for its duration and then releases all its pods. Pods bound to a gang that has not started are *held*;
held GPU time of gangs that never start before the horizon is *stranded*.

With a ``Preemptor`` (all-or-nothing steps only), a waiting gang that does not fit and whose priority may preempt
has lower-priority running work make way (``preemption``): the chosen victims are evicted — a gang that loses every
pod stops, its run so far is lost, and it goes back to the queue to start again from the beginning; a gang that
loses only pods above its ``minReplicas`` runs on without them — and the step is asked again for the preemptor on
what they freed. Evictions free capacity, so every waiting gang is then retried. After each eviction every running
gang is checked against the ledger: one left with a group below ``minReplicas`` is *broken* (the validator should
make that impossible; the replay counts it rather than trusting the chooser).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from api.core import GPU
from benchmarks.replay.decision import BatchDecisionStep, Decision, DecisionStep
from benchmarks.replay.ledger import Ledger
from benchmarks.replay.preemption import PreemptionRecord, Preemptor, candidates, could_fit
from benchmarks.replay.runs import GangRun, ReplayOutcome, Segment
from benchmarks.replay.workload import Workload
from placement.request import GangRequest, Status

__all__ = ["Fragmentation", "GangRun", "Observer", "Probe", "ReplayOutcome", "replay"]

_COMPLETION, _ARRIVAL = 0, 1

Fragmentation = Callable[[Sequence[GangRequest], Mapping[str, Mapping[str, int]]], int]
Probe = Callable[[GangRequest, Mapping[str, Mapping[str, int]]], bool]
Observer = Callable[[float, Ledger], None]


class _Replay:
    def __init__(
        self,
        *,
        workload: Workload,
        step: DecisionStep | BatchDecisionStep,
        horizon: float,
        fragmentation: Fragmentation | None,
        probe: Probe | None,
        preemptor: Preemptor | None,
    ):
        if preemptor is not None and (isinstance(step, BatchDecisionStep) or not step.all_or_nothing):
            raise ValueError("preemption is replayed for all-or-nothing steps that decide one gang at a time")
        self.step = step
        self.preemptor = preemptor
        self.horizon = horizon
        self.fragmentation = fragmentation
        self.probe = probe
        self.ledger = Ledger(workload.allocatable)
        for pod, (node, demand) in workload.background.items():
            self.ledger.bind(pod=pod, node=node, demand=demand)
        self.background_gpus = self.ledger.used_gpus
        self.runs = [GangRun(gang) for gang in workload.gangs]
        self.outcome = ReplayOutcome(runs=self.runs, horizon=horizon, capacity_gpus=self.ledger.capacity_gpus)
        if preemptor is not None:
            self.outcome.preemption = preemptor.policy
        self.index = {gang.key: i for i, gang in enumerate(workload.gangs)}
        self.waiting: list[int] = []  # run indices, in the order they (re)entered the queue
        self.running_gpus = 0
        self.fragmented = 0
        self.now = 0.0
        self.releases = 0  # capacity given back so far (completions, evictions): a fruitless preemption memo
        self.evicted_in_pass = False
        self._gpu_cache: dict[tuple[frozenset[str] | None, bool], int] = {}
        # (time, kind, run index, the run's generation): a completion of a run since evicted is stale
        self.events: list[tuple[float, int, int, int]] = [
            (gang.arrival, _ARRIVAL, i, 0) for i, gang in enumerate(workload.gangs)
        ]
        heapq.heapify(self.events)

    def advance(self, to: float) -> None:
        """Integrate the GPU states over [now, to)."""
        dt = to - self.now
        if dt <= 0:
            return
        held = sum(self.runs[i].bound_gpus for i in self.waiting)
        for i in self.waiting:
            if self.runs[i].bound:
                self.runs[i].held_gpu_seconds += self.runs[i].bound_gpus * dt
        out = self.outcome
        out.running_gpu_seconds += self.running_gpus * dt
        out.held_gpu_seconds += held * dt
        out.background_gpu_seconds += self.background_gpus * dt
        out.idle_gpu_seconds += (self.ledger.capacity_gpus - self.ledger.used_gpus) * dt
        out.fragmented_gpu_seconds += self.fragmented * dt
        self.now = to

    def complete(self, index: int) -> None:
        run = self.runs[index]
        for pod in run.bound:
            self.ledger.release(pod)
        self._gpu_cache.clear()
        self.releases += 1
        self.running_gpus -= run.bound_gpus
        run.end = self.now
        self.step.completed(run.gang)

    def _may_fit(self, request: GangRequest) -> bool:
        """A necessary condition, the same for every policy: all-or-nothing — each group's guaranteed GPUs are
        free on its eligible nodes; pod by pod — some eligible node has room for one pod of some group."""
        for group in request.groups:
            gpus = group.demand.get(GPU, 0)
            if not group.pods:
                continue
            if gpus == 0:
                if not self.step.all_or_nothing:
                    return True
                continue
            if self.step.all_or_nothing:
                if self._eligible_gpus(group.eligible, largest=False) < group.min_replicas * gpus:
                    return False
            elif self._eligible_gpus(group.eligible, largest=True) >= gpus:
                return True
        return self.step.all_or_nothing

    def _eligible_gpus(self, eligible: frozenset[str] | None, *, largest: bool) -> int:
        """Free GPUs over ``eligible`` nodes (all when None): their sum, or the largest on one node. Cached until
        the next bind or release, since many waiting gangs share their eligibility."""
        key = (eligible, largest)
        cached = self._gpu_cache.get(key)
        if cached is None:
            nodes = self.ledger.allocatable if eligible is None else eligible
            counts = [self.ledger.free_gpus(node) for node in nodes if node in self.ledger.allocatable]
            cached = max(counts, default=0) if largest else sum(counts)
            self._gpu_cache[key] = cached
        return cached

    def try_place(self, index: int) -> None:
        run = self.runs[index]
        remaining = run.remaining()
        if self._may_fit(remaining):
            self._decide(index, remaining)
        if self.preemptor is not None and run.start is None and not run.bound and run.gang.preempts:
            self._preempt(index, remaining)

    def _decide(self, index: int, remaining: GangRequest) -> None:
        step = self.step
        assert isinstance(step, DecisionStep)
        free = self.ledger.free()
        began = time.perf_counter()
        decision = step.decide(self.runs[index].gang, remaining, free)
        self.outcome.decision_seconds.append(time.perf_counter() - began)
        self._apply(index, decision, free)

    def _preempt(self, index: int, remaining: GangRequest) -> None:
        """Ask the choosers for victims; evict the applied one's and ask the step again on what they freed."""
        assert self.preemptor is not None
        run = self.runs[index]
        if run.refused_at == self.releases:
            return  # nothing was given back since its last fruitless attempt: it would find no room again
        victims, gangs = candidates(remaining, ((r.gang, r.bound) for r in self.runs if r.running))
        free = {node: dict(vector) for node, vector in self.ledger.free().items()}
        if not victims or not could_fit(remaining, free, victims):
            run.refused_at = self.releases
            return
        chosen, choices = self.preemptor.choose(remaining, free, victims, gangs)
        record = PreemptionRecord(self.now, run.gang.key, run.gang.priority, self.preemptor.policy, choices)
        self.outcome.preemptions.append(record)
        if chosen.status is not Status.PLACED:
            run.refused_at = self.releases
            return
        if not chosen.evicted:
            return  # it fits on what is free: the step refused it for another reason (a time limit), not room
        owner = {victim.key: victim.gang for victim in victims}
        by_gang: dict[str, list[str]] = {}
        for pod in chosen.evicted:
            by_gang.setdefault(owner[pod], []).append(pod)
        for gang, pods in sorted(by_gang.items()):
            run.gpus_evicted_for += self._evict(self.index[gang], pods)
        self._check_gangs()
        self.evicted_in_pass = True
        self._decide(index, run.remaining())
        record.started = run.start is not None

    def _evict(self, index: int, pods: Collection[str]) -> int:
        """Evict ``pods`` of a running gang; returns their GPUs. All of its pods: the gang stops, loses its run so
        far and waits again; some: it runs on without them."""
        run = self.runs[index]
        assert run.start is not None
        demand = run.gang.demand
        gpus = sum(demand[pod].get(GPU, 0) for pod in pods)
        whole = set(pods) == set(run.bound)
        run.past.append(Segment(dict(run.bound), gpus * (self.now - run.start), lost=whole))
        for pod in pods:
            self.ledger.release(pod)
            del run.bound[pod]
        self._gpu_cache.clear()
        self.releases += 1
        self.running_gpus -= gpus
        self.step.evicted(run.gang, pods)
        if whole:
            run.start, run.placement_score, run.queued_since = None, None, self.now
            run.evictions += 1
            run.generation += 1
            self.waiting.append(index)
            self.step.arrived(run.gang)
        return gpus

    def _check_gangs(self) -> None:
        """Every running gang, read from the ledger (not from the choice, nor from which gangs it named): one with a
        group below its minReplicas is broken."""
        for run in self.runs:
            if not run.running:
                continue
            for group in run.gang.request.groups:
                kept = sum(1 for pod in group.pods if self.ledger.node_of(pod) is not None)
                if kept < group.min_replicas:
                    self.outcome.broken.add(run.gang.key)

    def try_place_batch(self, indices: list[int]) -> None:
        """Batch steps: the gangs that may fit, in arrival order, handed over together; whatever the step did not
        consider (beyond its head of the queue) goes in the next call, until every candidate was considered."""
        step = self.step
        assert isinstance(step, BatchDecisionStep)
        candidates = [i for i in indices if i in self.waiting and self._may_fit(self.runs[i].remaining())]
        while candidates:
            free = self.ledger.free()
            gangs = [(self.runs[i].gang, self.runs[i].remaining()) for i in candidates]
            began = time.perf_counter()
            decisions, considered = step.decide_batch(gangs, free)
            self.outcome.decision_seconds.append(time.perf_counter() - began)
            for i in candidates:
                decision = decisions.get(self.runs[i].gang.key)
                if decision is not None:
                    self._apply(i, decision, free)
            seen = set(considered)
            rest = [i for i in candidates if self.runs[i].gang.key not in seen and i in self.waiting]
            if len(rest) == len(candidates):
                break  # the step considered none of them: asking again would not change anything
            candidates = [i for i in rest if self._may_fit(self.runs[i].remaining())]

    def _apply(self, index: int, decision: Decision, free: Mapping[str, Mapping[str, int]]) -> None:
        """Book a decision's binds (checked by the ledger); the gang starts once every guarantee is met."""
        run = self.runs[index]
        run.decisions += 1
        if decision.bind and not run.bound and self.probe is not None:
            run.probe = self.probe(run.gang.request, free)
        demand = run.gang.demand
        for pod, node in decision.bind.items():
            if pod not in demand or pod in run.bound:
                raise ValueError(f"gang {run.gang.key}: decision binds {pod}, which is not one of its pending pods")
            self.ledger.bind(pod=pod, node=node, demand=demand[pod])
            run.bound[pod] = node
            self._gpu_cache.clear()
        if run.guaranteed_met():
            run.start = self.now
            if run.first_start is None:
                run.first_start = self.now
            run.queued_seconds += self.now - run.queued_since
            run.placement_score = decision.placement_score
            self.running_gpus += run.bound_gpus
            self.waiting.remove(index)
            heapq.heappush(self.events, (self.now + run.gang.duration, _COMPLETION, index, run.generation))

    def _by_priority(self, indices: Iterable[int]) -> list[int]:
        """Highest priority first, then arrival (run indices are in arrival order)."""
        return sorted(indices, key=lambda i: (-self.runs[i].gang.priority, i))

    def _pass(self, indices: list[int]) -> None:
        if isinstance(self.step, BatchDecisionStep):
            self.try_place_batch(indices)
            return
        for index in indices:
            if index in self.waiting:
                self.try_place(index)

    def _drop_stale(self) -> None:
        """Completions of runs since evicted never happen."""
        while self.events and self.events[0][1] == _COMPLETION:
            _, _, index, generation = self.events[0]
            if generation == self.runs[index].generation:
                return
            heapq.heappop(self.events)

    def run(self, observer: Observer | None, progress: Callable[[float], None] | None) -> ReplayOutcome:
        self._drop_stale()
        while self.events and self.events[0][0] <= self.horizon:
            self.advance(self.events[0][0])
            freed, arrived = False, []
            while self.events and self.events[0][0] == self.now:
                _, kind, index, generation = heapq.heappop(self.events)
                if kind == _COMPLETION:
                    if generation == self.runs[index].generation:
                        self.complete(index)
                        freed = True
                else:
                    self.waiting.append(index)
                    self.step.arrived(self.runs[index].gang)
                    arrived.append(index)
            self._pass(self._by_priority(self.waiting if freed else arrived))
            while self.evicted_in_pass:  # what the victims freed beyond the preemptor's need is anybody's now
                self.evicted_in_pass = False
                self._pass(self._by_priority(self.waiting))
            self._drop_stale()
            self.ledger.check()
            if self.fragmentation is not None:
                pending = [self.runs[i].remaining() for i in self.waiting]
                self.fragmented = self.fragmentation(pending, self.ledger.free()) if pending else 0
            held = sum(self.runs[i].bound_gpus for i in self.waiting)
            self.outcome.timeline.append((self.now, self.running_gpus, held))
            if observer is not None:
                observer(self.now, self.ledger)
            if progress is not None:
                progress(self.now)
        self.advance(self.horizon)
        return self.outcome


def replay(
    workload: Workload,
    step: DecisionStep | BatchDecisionStep,
    *,
    horizon: float | None = None,
    fragmentation: Fragmentation | None = None,
    probe: Probe | None = None,
    observer: Observer | None = None,
    progress: Callable[[float], None] | None = None,
    preemptor: Preemptor | None = None,
) -> ReplayOutcome:
    """Run ``workload`` through ``step`` until ``horizon`` seconds (default: the last arrival, so the cluster is
    contended for the whole measured window); with ``preemptor``, waiting gangs of higher priority may evict."""
    if horizon is None:
        horizon = max((gang.arrival for gang in workload.gangs), default=0.0)
    state = _Replay(
        workload=workload,
        step=step,
        horizon=horizon,
        fragmentation=fragmentation,
        probe=probe,
        preemptor=preemptor,
    )
    return state.run(observer, progress)
