"""The decision step through the gang coordinator ``serve`` runs — the product, minus HTTP.

The replay plays kube-scheduler's part: at a gang's arrival its PodGang and pods enter a ``ClusterStore``; to
place it, each pending member goes through ``Coordinator.filter`` with the nodes kube-scheduler's own filters would
pass (eligible and with room, counting the members it already assumed this cycle), then every member that got a
node calls ``Coordinator.bind`` concurrently, as kube-scheduler's binding goroutines do, and the bind barrier
releases them together. Binds land in the store through ``InMemoryClusterWriter``; at completion the pods and
the PodGang are deleted. Whatever the coordinator bound is what the engine books.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from api.extender import ExtenderArgs, ExtenderBindingArgs, ExtenderBindingResult
from api.kube import Node, Pod
from placement import GangRequest, GroupRequest, solve
from scheduler.cluster_writer import InMemoryClusterWriter
from scheduler.coordinator import Coordinator, CoordinatorConfig
from scheduler.replay.decision import Decision, Free
from scheduler.replay.solve_step import solve_options
from scheduler.replay.workload import ReplayGang
from scheduler.state.store import ClusterStore


class CoordinatorStep:
    """``DecisionStep`` over ``scheduler.coordinator.Coordinator`` with one all-or-nothing policy."""

    all_or_nothing = True

    def __init__(
        self,
        *,
        policy: str,
        nodes: Sequence[Node],
        background: Sequence[Pod] = (),
        time_limit_seconds: float | None = None,
        workers: int | None = None,
    ) -> None:
        options = solve_options(policy, time_limit_seconds=time_limit_seconds, workers=workers)
        self.store = ClusterStore()
        self.store.replace("Node", list(nodes))
        self.store.replace("Pod", list(background))
        self.store.replace("PodGang", [])
        self.store.mark_synced()
        self.writer = InMemoryClusterWriter(self.store)
        self.coordinator = Coordinator(
            store=self.store,
            writer=self.writer,
            solver=solve,
            # The production barrier timeout: members reach bind one filter apart, and on a loaded machine a
            # shorter one would refuse gangs serve would bind.
            config=CoordinatorConfig(solve=options),
        )
        self._names = [node.name for node in nodes]
        self._loop = asyncio.new_event_loop()

    def close(self) -> None:
        self._loop.close()

    def arrived(self, gang: ReplayGang) -> None:
        for pod in gang.pods:
            self.store.apply("Pod", "ADDED", pod)
        if gang.podgang is not None:
            self.store.apply("PodGang", "ADDED", gang.podgang)

    def completed(self, gang: ReplayGang) -> None:
        # A watch's DELETED event carries the object's last state (bound to its node): the coordinator learns
        # from it that capacity was freed.
        for pod in gang.pods:
            self.store.apply("Pod", "DELETED", self.store.pod(pod.key) or pod)
        if gang.podgang is not None:
            self.store.apply("PodGang", "DELETED", gang.podgang)

    def decide(self, gang: ReplayGang, remaining: GangRequest, free: Free) -> Decision:
        return self._loop.run_until_complete(self._schedule(gang, remaining, free))

    async def _schedule(self, gang: ReplayGang, remaining: GangRequest, free: Free) -> Decision:
        pods = {pod.key: pod for pod in gang.pods}
        room = {node: dict(vector) for node, vector in free.items()}
        binds: dict[str, tuple[str, asyncio.Task[ExtenderBindingResult]]] = {}
        reason = ""
        for group in remaining.groups:
            for key in group.pods:
                pod = pods[key]
                reply = await self.coordinator.filter(ExtenderArgs(Pod=pod, NodeNames=self._fitting(group, room)))
                if not reply.NodeNames:
                    reason = reply.Error or next(iter(reply.FailedNodes.values()), "no node passed the filter")
                    if not binds:
                        return Decision(reason=reason)  # refused as a whole: kube-scheduler binds nothing
                    continue
                node = reply.NodeNames[0]
                for name, amount in group.demand.items():  # kube-scheduler assumes the pod on its node
                    room[node][name] = room[node].get(name, 0) - amount
                args = ExtenderBindingArgs(
                    PodName=pod.metadata.name, PodNamespace=pod.metadata.namespace, PodUID=pod.metadata.uid, Node=node
                )
                # The binding cycle runs beside the next pod's scheduling cycle: let it reach the barrier first.
                binds[key] = (node, asyncio.create_task(self.coordinator.bind(args)))
                await asyncio.sleep(0)
        replies = await asyncio.gather(*(task for _, task in binds.values()))
        bound = {key: node for (key, (node, _)), reply in zip(binds.items(), replies, strict=True) if not reply.Error}
        # The binder writes PodGang status in the background; let it land before the score is read from it.
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        await asyncio.gather(*others, return_exceptions=True)
        if len(bound) < len(binds):
            reason = next(reply.Error for reply in replies if reply.Error)
        return Decision(bind=bound, placement_score=self._score(gang) if bound else None, reason=reason)

    def _fitting(self, group: GroupRequest, room: Mapping[str, Mapping[str, int]]) -> list[str]:
        """What kube-scheduler's in-tree filters hand the extender: eligible nodes with room for the pod."""
        return [
            name
            for name in self._names
            if (group.eligible is None or name in group.eligible)
            and all(room[name].get(r, 0) >= a for r, a in group.demand.items())
        ]

    def _score(self, gang: ReplayGang) -> float | None:
        for key, status in reversed(self.writer.statuses):
            if key == gang.key and "placementScore" in status:
                score = status["placementScore"]
                return float(score) if score is not None else None
        return None
