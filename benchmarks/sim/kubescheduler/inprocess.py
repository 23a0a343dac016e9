"""kube-scheduler's informers on the in-process fake API (``benchmarks.sim.fakeapi.inprocess``): the API's
current objects are its lister (a cache with no lag), and the API's watch feeds its handlers."""

from __future__ import annotations

from typing import Any

from api.core import Node, Pod
from benchmarks.sim.fakeapi.inprocess import EventType, FakeApi, Kind
from benchmarks.sim.kubescheduler.scheduler import Demand, KubeScheduler, PodInfo

__all__ = ["InProcessInformer"]


class InProcessInformer:
    def __init__(self, api: FakeApi) -> None:
        self.api = api
        self._demands: dict[str, Demand] = {}  # by pod key: a pod's requests are parsed once
        self._infos: dict[str, tuple[Pod, PodInfo]] = {}  # the last pod object seen per key, and what it says

    def pod(self, key: str) -> PodInfo | None:
        pod = self.api.pods.get(key)
        return None if pod is None else self.info(pod)

    def info(self, pod: Pod) -> PodInfo:
        seen = self._infos.get(pod.key)
        if seen is not None and seen[0] is pod:
            return seen[1]
        demand = self._demands.get(pod.key)
        if demand is None:
            demand = self._demands[pod.key] = tuple(sorted(pod.requests().items()))
        info = PodInfo.of(pod, demand=demand)
        self._infos[pod.key] = (pod, info)
        return info

    def start(self, scheduler: KubeScheduler) -> None:
        """Watch, list into the handlers, then let the scheduler run."""

        def handler(kind: Kind, event_type: EventType, obj: Any) -> None:
            if kind == "Node":
                node: Node = obj
                scheduler.node_changed(node.name, node.allocatable())
            elif kind == "Pod":
                scheduler.pod_changed(event_type, self.info(obj))

        self.api.watch(handler)
        for node in self.api.nodes.values():
            scheduler.node_changed(node.name, node.allocatable())
        for pod in self.api.pods.values():
            scheduler.pod_changed("ADDED", self.info(pod))
        scheduler.start()
