"""A plan that runs in a worker thread while the release binds the gang's ready members (serve plans on
``asyncio.to_thread``; bind calls and the release run on the event loop) — found by the preemption replay, which
bound a training gang's best-effort workers outside its required NVLink clique in a few runs of ten (three replays
at once on two cores).

The interleaving, held in place by two gates: the guaranteed members w0 and w1 are ready on clique A; before the
release binds them, kube-scheduler offers w2 (best-effort) and its filter asks for a plan. That plan reads the gang
with w0 and w1 ready, not bound; then the release binds them on A, and only then does the plan read the free
capacity, which counts w0 and w1 twice (bound, and ready where the plan keeps them): its first tier, around the
ready members, fails (with topology-greedy, the replay's policy, which refuses a request of best-effort pods that
do not fit where cpsat answers Placed with none: the second test). The planner's last tier plans the gang from
scratch on what it reads — A full — puts w0, w1 and w2 in clique B, and the gang table installs it: nothing in the
plan's basis changed, although the members it moves are bound now. w2 is answered a node in B, while w0 and w1 run
in A: the required pack is broken.

Both were product bugs: ``GangTable`` now refuses to install a plan that puts a member elsewhere than it was bound
since the plan read the gang (the planner plans again around it), and topology-greedy places a request of
best-effort pods only with none where they do not fit.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from api.core import Pod
from api.extender import ExtenderArgs, ExtenderBindingArgs, PodRef
from placement import ClusterView, GangRequest, GroupRequest, Result, SolveOptions, Status, solve
from scheduler.extender.cluster_writer import InMemoryClusterWriter
from scheduler.extender.coordinator import Coordinator
from scheduler.extender.coordinator.gang_state import GangState
from scheduler.extender.state import ClusterStore, load_snapshot_into
from scheduler.snapshot import Snapshot
from tests.extender_support import CLIQUE, PATIENCE_SECONDS, gang, harness, node, pod, run, until
from topology import HostSpec, Topology

A, B = ["a0", "a1", "a2"], ["b0", "b1", "b2", "b3"]


class GatedWriter(InMemoryClusterWriter):
    """Binds only once the test opens the gate (the release's binding posts, held in flight)."""

    def __init__(self, store: ClusterStore) -> None:
        super().__init__(store)
        self.gate = asyncio.Event()

    async def bind(self, *, namespace: str, name: str, uid: str, node: str) -> None:
        await self.gate.wait()
        await super().bind(namespace=namespace, name=name, uid=uid, node=node)


class GatedStore(ClusterStore):
    """Once armed, the first read of free capacity from a worker thread (a plan, after it read the gang's members
    and their states) waits until the test lets it go on."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.reached = threading.Event()
        self.go = threading.Event()

    def capacity(self) -> Any:
        if self.armed and threading.current_thread() is not threading.main_thread() and not self.reached.is_set():
            self.reached.set()
            assert self.go.wait(PATIENCE_SECONDS)
        return super().capacity()


def _topology_greedy(request: GangRequest, view: ClusterView, options: SolveOptions | None = None) -> Result:
    return solve(request, view, replace(options or SolveOptions(), policy="topology-greedy"))


def _state(coordinator: Coordinator, gang: str) -> GangState | None:
    summary = coordinator.table.summary(gang)
    return summary.state if summary is not None else None


def _bind(p: Pod, node_name: str) -> ExtenderBindingArgs:
    return ExtenderBindingArgs(
        PodName=p.metadata.name, PodNamespace=p.metadata.namespace, PodUID=p.metadata.uid, Node=node_name
    )


def test_a_plan_racing_the_release_never_puts_a_member_outside_the_bound_members_clique() -> None:
    # Cliques A (a0, a1, a2; a2 busy) and B (b0..b3; b0 busy), 8 GPUs a node. G: 4 workers of 8 GPUs, 2 guaranteed,
    # required in one clique. Best fit puts w0, w1 on A's two free nodes (the tighter clique); A has no room for the
    # extras.
    nodes = [node(n, clique="A") for n in A] + [node(n, clique="B") for n in B]
    members, podgang = gang("g", workers=4, gpus=8, min_replicas=2, required=CLIQUE)
    busy = [pod("busy-a", gpus=8, node_name="a2"), pod("busy-b", gpus=8, node_name="b0")]
    w0, w1, w2, _ = members
    store = GatedStore()
    load_snapshot_into(store, Snapshot(nodes=nodes, pods=[*members, *busy], podgangs=[podgang]))
    h = harness(nodes=nodes, store=store, writer_type=GatedWriter, solver=_topology_greedy)
    writer = h.writer
    assert isinstance(writer, GatedWriter)
    coordinator = h.coordinator

    async def main() -> Mapping[str, object]:
        free = ["a0", "a1", *B[1:]]
        planned = {}
        for member in (w0, w1):
            reply = await coordinator.filter(ExtenderArgs(Pod=PodRef.of(member), NodeNames=free))
            planned[member.key] = reply.NodeNames[0]
        assert set(planned.values()) == {"a0", "a1"}

        async def open_gates() -> None:
            await until(store.reached.is_set, "the plan for w2 read its gang, not yet the capacity")
            writer.gate.set()  # the release binds w0 and w1 on A
            await until(lambda: all(p.spec.nodeName for p in map(h.store.pod, (w0.key, w1.key)) if p), "w0, w1 bound")
            await until(lambda: _state(coordinator, "default/g") is GangState.BOUND, "the release pass over")
            store.go.set()

        store.armed = True
        opener = asyncio.create_task(open_gates())
        binds = [asyncio.create_task(coordinator.bind(_bind(m, planned[m.key]))) for m in (w0, w1)]
        await asyncio.sleep(0)  # both bind calls arrive: the gang is complete, its release is queued
        # kube-scheduler's next cycle offers w2 before the release runs (its filter decides at once).
        reply = await coordinator.filter(ExtenderArgs(Pod=PodRef.of(w2), NodeNames=B[1:]))
        await opener
        await asyncio.gather(*binds)
        return {"w2": reply.NodeNames, "bound": {p.key: p.spec.nodeName for p in h.store.pods() if p.spec.nodeName}}

    found = run(main)
    bound = found["bound"]
    assert isinstance(bound, dict) and bound[w0.key] in A and bound[w1.key] in A
    # w0 and w1 run in clique A: w2 may join them there or wait, never be answered a node of clique B.
    assert not set(found["w2"] or []) & set(B), found  # type: ignore[arg-type]


def _extras_only(policy: str) -> Result:
    """One group, minReplicas 0 (a best-effort member asked for alone), on two full nodes: nothing is guaranteed,
    so placing nothing is a valid answer."""
    hosts = [HostSpec(n, {"kubernetes.io/hostname": n}, {"nvidia.com/gpu": 8}) for n in ("a", "b")]
    free = {n: {"nvidia.com/gpu": 0} for n in ("a", "b")}
    group = GroupRequest("w", ("ns/p0",), {"nvidia.com/gpu": 8}, min_replicas=0)
    return solve(GangRequest("ns", "g", (group,)), ClusterView(Topology(hosts), free), SolveOptions(policy=policy))


@pytest.mark.parametrize("policy", ["cpsat", "gang-best-fit"])
def test_a_request_of_best_effort_pods_that_do_not_fit_is_placed_with_none(policy: str) -> None:
    result = _extras_only(policy)
    assert (result.status, dict(result.assignment)) == (Status.PLACED, {})


def test_topology_greedy_places_a_request_of_best_effort_pods_that_do_not_fit_with_none_too() -> None:
    result = _extras_only("topology-greedy")
    assert (result.status, dict(result.assignment)) == (Status.PLACED, {}), result.reason
