"""The decision step through the gang coordinator ``serve`` runs — the product, minus HTTP.

The replay plays kube-scheduler's part: at a gang's arrival its PodGang and pods enter a ``ClusterStore``; to
place it, each pending member goes through ``Coordinator.filter`` with the nodes kube-scheduler's own filters would
pass (eligible and with room, counting the members it already assumed this cycle), and every member that got a
node calls ``Coordinator.bind`` concurrently, as kube-scheduler's binding goroutines do; the call that completes
the gang makes the coordinator bind its ready members. Binds land in the store through ``InMemoryClusterWriter``;
at completion the pods and the PodGang are deleted. Whatever the coordinator bound is what the engine books.

The coordinator's clock is the step's own: every decision happens a day after the previous one, so what a gang
that did not complete held (its reservations, its ready members) has expired by the next decision, as it would
have in the real time between two retries, and the replay stays deterministic. Of the planner's tick the step
runs the reservations' expiry only: the rest of it (``Coordinator.expire``) also sweeps refused gangs to make room
for them, and in the replay preemption is the engine's (``--preemption``, the victims chosen by
``placement.preemption`` on the engine's state): a sweep a simulated day apart would make room out of the engine's
order, inside another gang's decision. For the same reason the coordinator's own room-making never evicts here.

Evictions the engine decides reach the store as ``serve``'s do: through the in-memory writer's ``evict`` (the pod
is marked deleting) and ``finalize_evictions`` (its kubelet deletes it). A gang evicted whole leaves the store as a
finished one does, PodGang and all, and arrives again when the engine puts it back in the queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from api.core import Node, Pod, PriorityClass
from api.extender import ExtenderArgs, ExtenderBindingArgs, ExtenderBindingResult, PodRef
from benchmarks.replay.decision import Decision, Free
from benchmarks.replay.solve_step import solve_options
from benchmarks.replay.workload import ReplayGang
from placement import GangRequest, GroupRequest, solve
from scheduler.extender.cluster_writer import InMemoryClusterWriter
from scheduler.extender.coordinator import Coordinator, CoordinatorConfig
from scheduler.extender.coordinator.making_room import RoomSettings
from scheduler.extender.state.store import ClusterStore

_DAY = 86_400.0
T = TypeVar("T")


async def _at_once(seconds: float) -> None:
    await asyncio.sleep(0)


async def _inline(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return call(*args, **kwargs)


class CoordinatorStep:
    """``DecisionStep`` over ``scheduler.extender.coordinator.Coordinator`` with one all-or-nothing policy."""

    all_or_nothing = True

    def __init__(
        self,
        *,
        policy: str,
        nodes: Sequence[Node],
        background: Sequence[Pod] = (),
        priority_classes: Sequence[PriorityClass] = (),
        time_limit_seconds: float | None = None,
        workers: int | None = None,
    ) -> None:
        options = solve_options(policy, time_limit_seconds=time_limit_seconds, workers=workers)
        self.store = ClusterStore()
        self.store.replace("PriorityClass", list(priority_classes))
        self.store.replace("Node", list(nodes))
        self.store.replace("Pod", list(background))
        self.store.replace("PodGang", [])
        self.store.mark_synced()
        self.writer = InMemoryClusterWriter(self.store)
        self._now = 0.0
        self.coordinator = Coordinator(
            store=self.store,
            writer=self.writer,
            solver=solve,
            # One gang at a time: the engine asks about one gang per decision and a simulated day passes between
            # decisions, so the reservations a batch made for the others would expire before their turn. Queue-aware
            # planning is replayed by ``cpsat-batch`` (``batch_step``), which hands the whole queue over at once.
            config=CoordinatorConfig(solve=options, batch_size=1, room=RoomSettings(evict=False)),
            clock=lambda: self._now,
            # Every member reaches bind within this one pass, so no call needs to wait for the rest: the ready
            # members are bound by the call that completes the gang.
            timer=_at_once,
            # Plans run on the loop, as in the lifecycle simulator: in a worker thread (serve's way) a plan races
            # the release binding the gang's ready members, and the replay stops being repeatable.
            blocking=_inline,
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

    def evicted(self, gang: ReplayGang, pods: Collection[str]) -> None:
        for key in pods:
            pod = self.store.pod(key)
            if pod is not None:
                self.writer.evict(namespace=pod.metadata.namespace, name=pod.metadata.name, uid=pod.metadata.uid)
        self.writer.finalize_evictions()
        if not self._bound({pod.key: pod for pod in gang.pods}):
            self.completed(gang)  # evicted whole: gone from the store until the engine queues it again

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
        self._now += _DAY
        self.coordinator.table.expire(self._now)
        pods = {pod.key: pod for pod in gang.pods}
        bound_before = self._bound(pods)
        room = {node: dict(vector) for node, vector in free.items()}
        binds: list[asyncio.Task[ExtenderBindingResult]] = []
        reasons: list[str] = []
        for group in remaining.groups:
            for key in group.pods:
                pod = pods[key]
                reply = await self.coordinator.filter(
                    ExtenderArgs(Pod=PodRef.of(pod), NodeNames=self._fitting(group, room))
                )
                if not reply.NodeNames:
                    reasons.append(reply.Error or next(iter(reply.FailedNodes.values()), "no node passed the filter"))
                    if not binds:
                        return Decision(reason=reasons[0])  # refused as a whole: kube-scheduler binds nothing
                    continue
                node = reply.NodeNames[0]
                for name, amount in group.demand.items():  # kube-scheduler assumes the pod on its node
                    room[node][name] = room[node].get(name, 0) - amount
                args = ExtenderBindingArgs(
                    PodName=pod.metadata.name, PodNamespace=pod.metadata.namespace, PodUID=pod.metadata.uid, Node=node
                )
                # The binding cycle runs beside the next pod's scheduling cycle: let it reach the coordinator first.
                binds.append(asyncio.create_task(self.coordinator.bind(args)))
                await asyncio.sleep(0)
        replies = await asyncio.gather(*binds)
        reasons.extend(reply.Error for reply in replies if reply.Error)
        # The coordinator writes PodGang status in the background; let it land before the score is read from it.
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        await asyncio.gather(*others, return_exceptions=True)
        self._report()
        bound = {key: node for key, node in self._bound(pods).items() if key not in bound_before}
        return Decision(
            bind=bound,
            placement_score=self._score(gang) if bound else None,
            reason="" if bound else (reasons[0] if reasons else "nothing was bound"),
        )

    def _bound(self, pods: Mapping[str, Pod]) -> dict[str, str]:
        found = {key: self.store.pod(key) for key in pods}
        return {key: pod.spec.nodeName for key, pod in found.items() if pod is not None and pod.spec.nodeName}

    def _report(self) -> None:
        """Write the PodGang status the background worker would (the placement score is read from it)."""
        for kind, ref in self.coordinator.work.take(0):
            if kind == "report":
                self.coordinator.reporter.report(ref)

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
