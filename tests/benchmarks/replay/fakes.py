"""Small hand-made replay inputs and two transparent decision steps, so engine and metrics tests can state their
expected numbers by hand. The real policies are exercised through ``placement.solve`` in the bench tests."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from benchmarks.replay.decision import Decision, Free
from benchmarks.replay.workload import ReplayGang, Workload
from placement.request import GangRequest, GroupRequest, PackScope
from topology import HostSpec

GPU = "nvidia.com/gpu"
CLIQUE = "nvidia.com/gpu.clique"


def host(name: str, *, gpus: int, clique: str | None = None) -> HostSpec:
    labels = {"kubernetes.io/hostname": name}
    if clique:
        labels[CLIQUE] = clique
    return HostSpec(name, labels, {GPU: gpus, "cpu": 64_000, "pods": 110})


def gang(
    name: str,
    *,
    arrival: float,
    duration: float,
    pods: int,
    gpus: int,
    min_replicas: int | None = None,
    required: str | None = None,
    priority: int = 0,
    preempts: bool = True,
) -> ReplayGang:
    group = GroupRequest(
        name=f"{name}-worker",
        pods=tuple(f"ns/{name}-{i}" for i in range(pods)),
        demand={GPU: gpus, "cpu": 1000, "pods": 1},
        min_replicas=pods if min_replicas is None else min_replicas,
    )
    packs = (PackScope(groups=(group.name,), required=required),) if required else ()
    request = GangRequest("ns", name, (group,), packs, priority=priority)
    return ReplayGang(request=request, arrival=arrival, duration=duration, preempts=preempts)


def workload(hosts: Sequence[HostSpec], gangs: Sequence[ReplayGang]) -> Workload:
    return Workload(hosts=tuple(hosts), gangs=tuple(sorted(gangs, key=lambda g: g.arrival)))


def _first_fit(request: GangRequest, free: Free) -> dict[str, str]:
    room = {node: dict(vector) for node, vector in sorted(free.items())}
    bind: dict[str, str] = {}
    for group in request.groups:
        for pod in group.pods:
            node = next((n for n, v in room.items() if all(v.get(r, 0) >= a for r, a in group.demand.items())), None)
            if node is None:
                break
            for resource, amount in group.demand.items():
                room[node][resource] -= amount
            bind[pod] = node
    return bind


def _meets_min(request: GangRequest, bind: Mapping[str, str]) -> bool:
    return all(sum(1 for pod in group.pods if pod in bind) >= group.min_replicas for group in request.groups)


class FirstFitGang:
    """All-or-nothing first fit by node name: binds every pod that fits, or nothing if the minimum is not met."""

    all_or_nothing = True

    def arrived(self, gang: ReplayGang) -> None:
        return None

    def completed(self, gang: ReplayGang) -> None:
        return None

    def evicted(self, gang: ReplayGang, pods: Collection[str]) -> None:
        return None

    def decide(self, gang: ReplayGang, remaining: GangRequest, free: Free) -> Decision:
        bind = _first_fit(remaining, free)
        return Decision(bind=bind, placement_score=1.0) if _meets_min(remaining, bind) else Decision()


class FirstFitPodByPod(FirstFitGang):
    """kube-scheduler without gangs: binds whatever pods fit, minimum or not."""

    all_or_nothing = False

    def decide(self, gang: ReplayGang, remaining: GangRequest, free: Free) -> Decision:
        return Decision(bind=_first_fit(remaining, free))


class Overcommitter(FirstFitGang):
    """A broken policy: puts every pod on the first node regardless of room."""

    def decide(self, gang: ReplayGang, remaining: GangRequest, free: Free) -> Decision:
        first = min(free)
        return Decision(bind={pod: first for group in remaining.groups for pod in group.pods})
