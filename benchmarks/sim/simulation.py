"""A cluster, a kube-scheduler, the extender and a Grove-like controller on one simulated clock.

``Simulation`` builds nodes and gangs, runs until every gang is whole (or a deadline), and reports what happened:
when each gang became whole, how long any gang was partly bound and whether its PodGang said so meanwhile, how
many scheduling cycles and extender calls it took, and every overcommitted node (there must be none). Time is
looptime's: sleeps and time-outs complete as soon as nothing else can run, so minutes pass in milliseconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import looptime

from api.core import GPU, Pod
from api.grove import LABEL_PODGANG
from benchmarks.sim.extender import ExtenderProcess, install_task_owner
from benchmarks.sim.fakeapi.inprocess import BindFault, EventType, FakeApi, Kind
from benchmarks.sim.kubescheduler.inprocess import InProcessInformer
from benchmarks.sim.kubescheduler.queue import MAX_BACKOFF, SchedulingQueue
from benchmarks.sim.kubescheduler.scheduler import KubeScheduler, SchedulerStats
from scheduler.extender.coordinator import CoordinatorConfig
from topology.levels import HOSTNAME_KEY

__all__ = ["GangSpec", "Simulation", "SimulationOutcome"]

CLIQUE = "nvidia.com/gpu.clique"


@dataclass(frozen=True)
class GangSpec:
    """A PodGang of one or more groups: group → (pods, minReplicas, GPUs per pod); members created at ``at``
    (seconds), or the members whose index is in ``late`` at ``late_at`` (a second cohort)."""

    name: str
    groups: dict[str, tuple[int, int, int]]
    at: float = 0.0
    late: frozenset[int] = frozenset()
    late_at: float = 0.0
    required: str | None = None
    priority: int = 0  # every member's spec.priority
    fits: bool = True  # False: a gang that cannot be placed (the run does not wait for it)

    @property
    def pods(self) -> int:
        return sum(size for size, _, _ in self.groups.values())


@dataclass
class SimulationOutcome:
    whole_at: dict[str, float]  # gang → simulated seconds at which every group had minReplicas bound
    partial_seconds: dict[str, float]  # gang → longest time it was partly bound (some bound, some group short)
    partial_unreported: list[str]  # gangs partly bound for long with no PartiallyBound condition written meanwhile
    partial_at_end: list[str]
    overcommits: list[str]
    stats: SchedulerStats
    simulated_seconds: float
    cpu_seconds: float
    extender_binds: int
    lives: int

    def summary(self) -> dict[str, Any]:
        return {
            "whole": len(self.whole_at),
            "last_whole_s": round(max(self.whole_at.values(), default=0.0), 2),
            "cycles": self.stats.cycles,
            "filter_calls": self.stats.filter_calls,
            "filter_errors": self.stats.filter_errors,
            "filter_refusals": self.stats.filter_refusals,
            "bind_calls": self.stats.bind_calls,
            "bind_errors": self.stats.bind_errors,
            "moves": self.stats.moves,
            "bound_by_extender_release": self.stats.bound_by_others,
            "cpu_s": round(self.cpu_seconds, 2),
        }


@dataclass
class _GangTrack:
    minimums: dict[str, int]
    group_of: dict[str, str]
    bound_pods: set[str] = field(default_factory=set)
    bound: dict[str, int] = field(default_factory=dict)
    partial_since: float | None = None
    longest_partial: float = 0.0
    reported_since: bool = False


class Simulation:
    SETTLE_SECONDS = 2.0

    def __init__(
        self,
        *,
        nodes: int,
        gpus_per_node: int = 4,
        clique_size: int | None = None,
        pods_per_second: float = 80.0,
        http_timeout: float = 5.0,
        watch_lag: float = 0.02,
        config: CoordinatorConfig | None = None,
        regrow_deleted: float | None = 1.0,
        max_backoff: float = MAX_BACKOFF,
    ) -> None:
        self.loop = looptime.new_event_loop(noop_cycles=1)
        install_task_owner(self.loop)
        self.api = FakeApi(self.loop)
        self.config = config or CoordinatorConfig()
        self.extender = ExtenderProcess(self.api, config=self.config, watch_lag=watch_lag)
        self.informer = InProcessInformer(self.api)
        self.scheduler = KubeScheduler(
            lister=self.informer,
            extender=self.extender,
            cycle_seconds=1.0 / pods_per_second,
            http_timeout=http_timeout,
            queue=SchedulingQueue(max_backoff=max_backoff),
        )
        self._nodes = [
            _node(f"node-{i:05d}", gpus=gpus_per_node, clique=f"c{i // clique_size}" if clique_size else "c0")
            for i in range(nodes)
        ]
        self._gangs: list[GangSpec] = []
        self._tracks: dict[str, _GangTrack] = {}
        self._whole_at: dict[str, float] = {}
        self._scheduled: list[tuple[float, Callable[[], None]]] = []
        self._regrow = regrow_deleted  # seconds until a deleted member is created again (Grove does), or never
        self.intruded_on: str | None = None

    # --- the scenario --------------------------------------------------------------------------------------------

    def add_gang(self, spec: GangSpec) -> None:
        self._gangs.append(spec)

    @property
    def gangs(self) -> list[GangSpec]:
        return list(self._gangs)

    def at(self, seconds: float, action: Callable[[], None]) -> None:
        self._scheduled.append((seconds, action))

    def restart_extender(self, *, at: float, downtime: float) -> None:
        # The start is scheduled by the kill: asyncio does not order timers due at the same instant, and with no
        # downtime a start run before its kill left the extender down for good.
        def kill_then_start() -> None:
            self.extender.kill()
            self.loop.call_later(downtime, self.extender.start)

        self.at(at, kill_then_start)

    def restart_after_binds(self, binds: int, *, downtime: float) -> None:
        """Kill the extender right after the API accepted its ``binds``-th binding (mid-release), restart later."""

        def on_bind(key: str) -> None:
            if self.api.binds == binds and self.extender.up:
                self.extender.kill()
                self.loop.call_later(downtime, self.extender.start)

        self.api.on_bind = on_bind

    def take_planned_node(self, *, at: float, member: str, gpus: int) -> None:
        """At ``at``, a pod of another scheduler is bound to the node ``member`` is planned (or ready) on."""

        def intrude() -> None:
            coordinator = self.extender.coordinator
            gang = member.split("/", 1)[1].rsplit("-", 2)[0]
            view = coordinator.table.member(f"default/{gang}", member) if coordinator else None
            node = view and (view.ready or view.planned)
            if node:
                self.intruded_on = node
                intruder = _pod(f"intruder-{node}", gpus=gpus, scheduler="default-scheduler")
                intruder["spec"]["nodeName"] = node
                self.api.create_pod(intruder)

        self.at(at, intrude)

    def block(self, pod_keys: list[str], *, until: float) -> None:
        """kube-scheduler's own filters refuse these pods until ``until`` (say, a volume being provisioned); then a
        node changes (the cluster event that lets kube-scheduler look at them again)."""
        for key in pod_keys:
            self.scheduler.blocked[key] = until

        def unblock() -> None:
            self.api.touch_node(next(iter(self.api.nodes)))

        self.at(until, unblock)

    def fail_binds(self, pod_keys: list[str], fault: BindFault, *, times: int = 1) -> None:
        for key in pod_keys:
            self.api.faults.setdefault(key, []).extend([fault] * times)

    def members(self, gang: str) -> list[str]:
        spec = next(s for s in self._gangs if s.name == gang)
        return [f"default/{name}" for name in _pod_names(spec)]

    # --- running -------------------------------------------------------------------------------------------------

    def run(self, *, until: float) -> SimulationOutcome:
        started = time.process_time()
        try:
            self.loop.run_until_complete(self._main(until))
        finally:
            self.scheduler.stop()
            self.extender.kill()
            left = asyncio.all_tasks(self.loop)
            for task in left:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            self.loop.close()
        return SimulationOutcome(
            whole_at=dict(self._whole_at),
            partial_seconds={gang: t.longest_partial for gang, t in self._tracks.items() if t.longest_partial},
            partial_unreported=[g for g, t in self._tracks.items() if t.longest_partial > 30 and not t.reported_since],
            partial_at_end=[g for g, t in self._tracks.items() if t.partial_since is not None],
            overcommits=list(self.api.overcommits),
            stats=self.scheduler.stats,
            simulated_seconds=self._now(),
            cpu_seconds=time.process_time() - started,
            extender_binds=self.api.binds,
            lives=self.extender.lives,
        )

    async def _main(self, until: float) -> None:
        for node in self._nodes:
            self.api.add_node(node)
        self.api.watch(self._observe)
        if self._regrow is not None:
            self.api.on_pod_deleted = self._regrow_member
        self.extender.start()
        self.informer.start(self.scheduler)
        for spec in self._gangs:
            self._track(spec)
            self.loop.call_later(spec.at, self._create, spec, False)
            if spec.late:
                self.loop.call_later(spec.late_at, self._create, spec, True)
        for seconds, action in self._scheduled:
            self.loop.call_later(seconds, action)
        expected = {spec.name for spec in self._gangs if spec.fits}
        while self._now() < until and (not expected <= set(self._whole_at) or self._partial()):
            await asyncio.sleep(0.5)
        await asyncio.sleep(self.SETTLE_SECONDS)  # the background worker's status writes trail the binds

    def _create(self, spec: GangSpec, late: bool) -> None:
        if not late:
            self.api.add_podgang(_podgang(spec))
        index = 0
        for group, (size, _, gpus) in spec.groups.items():
            for i in range(size):
                if (index in spec.late) == late:
                    self.api.create_pod(
                        _pod(f"{spec.name}-{group}-{i}", gpus=gpus, gang=spec.name, priority=spec.priority)
                    )
                index += 1

    def _regrow_member(self, pod: Pod) -> None:
        """Grove re-creates a lost member from its template: same name and spec, a new UID, not bound."""
        assert self._regrow is not None
        gang = pod.metadata.labels.get(LABEL_PODGANG)
        gpus = pod.requests().get(GPU, 0)
        fresh = _pod(pod.metadata.name, gpus=gpus, gang=gang, priority=pod.spec.priority or 0)
        self.loop.call_later(self._regrow, lambda: pod.key in self.api.pods or self.api.create_pod(fresh))

    # --- what the API says about each gang -----------------------------------------------------------------------

    def _track(self, spec: GangSpec) -> None:
        group_of = {}
        for group, (size, _, _) in spec.groups.items():
            for i in range(size):
                group_of[f"default/{spec.name}-{group}-{i}"] = group
        self._tracks[spec.name] = _GangTrack({g: m for g, (_, m, _) in spec.groups.items()}, group_of)

    def _observe(self, kind: Kind, event_type: EventType, obj: Any) -> None:
        now = self._now()
        if kind == "PodGang":
            track = self._tracks.get(obj.metadata.name)
            conditions = obj.status.conditions if obj.status else []
            if track is not None and track.partial_since is not None:
                track.reported_since |= any(c.reason == "PartiallyBound" for c in conditions)
            return
        if kind != "Pod":
            return
        gang = obj.metadata.labels.get("grove.io/podgang")
        track = self._tracks.get(gang or "")
        if track is None:
            return
        group = track.group_of[obj.key]
        is_bound = event_type != "DELETED" and bool(obj.spec.nodeName)
        was_bound = obj.key in track.bound_pods
        if is_bound != was_bound:
            track.bound_pods.symmetric_difference_update({obj.key})
            track.bound[group] = track.bound.get(group, 0) + (1 if is_bound else -1)
        whole = all(track.bound.get(g, 0) >= m for g, m in track.minimums.items())
        if whole and gang not in self._whole_at:
            self._whole_at[gang] = now
        partial = not whole and any(track.bound.values())
        if partial and track.partial_since is None:
            track.partial_since, track.reported_since = now, False
        elif not partial and track.partial_since is not None:
            track.longest_partial = max(track.longest_partial, now - track.partial_since)
            track.partial_since = None

    def _partial(self) -> bool:
        return any(t.partial_since is not None for t in self._tracks.values())

    def _now(self) -> float:
        return self.loop.time()


def _pod_names(spec: GangSpec) -> list[str]:
    return [f"{spec.name}-{group}-{i}" for group, (size, _, _) in spec.groups.items() for i in range(size)]


# --- the objects, as a Grove-like controller creates them --------------------------------------------------------


def _node(name: str, *, gpus: int, clique: str) -> dict[str, Any]:
    allocatable = {"cpu": "128", "memory": "1000Gi", "pods": "110", GPU: str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME_KEY: name, CLIQUE: clique}},
        "spec": {},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def _pod(
    name: str, *, gpus: int, gang: str | None = None, priority: int = 0, scheduler: str = "grove"
) -> dict[str, Any]:
    # Extended resources must have request == limit, as real manifests set them.
    resources = {"requests": {GPU: str(gpus), "cpu": "1"}, "limits": {GPU: str(gpus)}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {LABEL_PODGANG: gang} if gang else {}},
        "spec": {
            "schedulerName": scheduler,
            "priority": priority,
            "containers": [{"name": "main", "resources": resources}],
        },
        "status": {"phase": "Pending"},
    }


def _podgang(spec: GangSpec) -> dict[str, Any]:
    groups = [
        {
            "name": group,
            "podReferences": [{"namespace": "default", "name": f"{spec.name}-{group}-{i}"} for i in range(size)],
            "minReplicas": minimum,
        }
        for group, (size, minimum, _) in spec.groups.items()
    ]
    body: dict[str, Any] = {"podgroups": groups}
    if spec.required:
        body["topologyConstraint"] = {"packConstraint": {"required": spec.required}}
    return {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": spec.name, "namespace": "default"},
        "spec": body,
    }
