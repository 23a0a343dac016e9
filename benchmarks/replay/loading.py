"""Reading a replay's workload from a snapshot (the format ARCHITECTURE.md describes)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from benchmarks.replay.workload import ReplayGang, Workload
from scheduler.extender.translation.cluster_view import build_topology, holds_capacity
from scheduler.extender.translation.gang_request import GangRequestError, gang_request
from scheduler.extender.translation.priority import gang_priority
from scheduler.snapshot import DURATION_ANNOTATION, Snapshot
from topology import Level, Topology


class WorkloadError(ValueError):
    """A snapshot that cannot be replayed; the message names the PodGang and the field."""


def load_workload(
    snapshot: Snapshot, *, levels: Sequence[Level] | None = None, default_duration: float | None = None
) -> tuple[Workload, Topology]:
    """The replay's workload and topology from a snapshot.

    Bound, non-terminal pods are background load for the whole replay. PodGangs none of whose pods are bound are
    the workload: each arrives at its ``metadata.creationTimestamp`` (the earliest one is t = 0) and runs for its
    ``grove-extender/duration-seconds`` annotation, or ``default_duration`` when it has none (a cluster recorded by
    ``grove-extender record`` has none: nobody knows yet how long its pending gangs will run). Gangs already
    (partly) bound are background, not replayed. A gang's priority (and whether it may preempt) is the one rule of
    ``translation.priority``, through the snapshot's PriorityClasses.
    """
    topology = build_topology(snapshot.nodes, levels=levels)
    pods = {pod.key: pod for pod in snapshot.pods}
    background = {pod.key: (pod.spec.nodeName, pod.requests()) for pod in snapshot.pods if holds_capacity(pod)}
    pending = []
    for gang in snapshot.podgangs:
        members = gang.member_keys()
        if any(key in background for key in members):
            continue
        created = gang.metadata.creationTimestamp
        if created is None:
            raise WorkloadError(f"PodGang {gang.key}: metadata.creationTimestamp is required for a replay")
        raw = gang.metadata.annotations.get(DURATION_ANNOTATION)
        try:
            duration = float(raw) if raw is not None else default_duration or -1.0
        except ValueError:
            duration = -1.0
        if not 0 < duration < math.inf:
            hint = (
                "; a snapshot without durations (a recorded cluster) needs bench --duration SECONDS"
                if raw is None
                else ""
            )
            raise WorkloadError(
                f"PodGang {gang.key}: metadata.annotations[{DURATION_ANNOTATION}] must be a positive, finite number of "
                f"seconds, got {raw!r}{hint}"
            )
        try:
            request = gang_request(gang, pods, snapshot.nodes, classes=snapshot)
        except GangRequestError as err:
            raise WorkloadError(str(err)) from None
        found = tuple(pods[key] for key in members if key in pods)
        pending.append((created, gang, request, duration, found))
    pending.sort(key=lambda item: (item[0], item[1].key))
    start = pending[0][0] if pending else None
    gangs = tuple(
        ReplayGang(
            request=request,
            arrival=(created - start).total_seconds() if start else 0.0,
            duration=duration,
            podgang=gang,
            pods=members,
            preempts=gang_priority(gang, members, snapshot).preempts,
        )
        for created, gang, request, duration, members in pending
    )
    hosts = tuple(topology.hosts.values())
    return Workload(hosts=hosts, gangs=gangs, background=background, start=start), topology
