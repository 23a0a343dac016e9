"""Gang priority and preemption through the coordinator, on an in-memory cluster: a PodGang's PriorityClass decides,
reservations of lower gangs yield, whole lower gangs (never part of one below its minimum) are evicted through the
writer's Eviction API, and the preemptor binds whole once they are gone."""

from __future__ import annotations

import asyncio
from typing import Any

from api.core import Pod, PriorityClass
from api.grove import PodGang
from api.policy import PodDisruptionBudget
from scheduler.extender.coordinator.making_room import Room
from scheduler.extender.coordinator.members import GangRef
from tests.builders import make_pod
from tests.extender_support import (
    CLIQUE,
    Harness,
    assert_no_overcommit,
    bind_body,
    filter_one,
    gang,
    harness,
    node,
    run,
)

BATCH, LOW, HIGH, CALM = "batch", "low", "high", "calm"
CLASSES = [
    PriorityClass.model_validate({"metadata": {"name": BATCH}, "value": 10}),
    PriorityClass.model_validate({"metadata": {"name": LOW}, "value": 100}),
    PriorityClass.model_validate({"metadata": {"name": HIGH}, "value": 1000}),
    PriorityClass.model_validate({"metadata": {"name": CALM}, "value": 1000, "preemptionPolicy": "Never"}),
]
NAMES = ["a0", "a1", "b0", "b1"]


def _nodes() -> list[Any]:
    # Two NVLink domains of 2 nodes × 8 GPUs.
    return [node("a0", clique="A"), node("a1", clique="A"), node("b0", clique="B"), node("b1", clique="B")]


def _classed(pg: PodGang, name: str) -> PodGang:
    return pg.model_copy(update={"spec": pg.spec.model_copy(update={"priorityClassName": name})})


def _bound(pods: list[Pod], nodes: list[str]) -> list[Pod]:
    """``pods`` bound round-robin over ``nodes`` (Running: what a replay's snapshot holds)."""
    return [
        p.model_copy(update={"spec": p.spec.model_copy(update={"nodeName": nodes[i % len(nodes)]})})
        for i, p in enumerate(pods)
    ]


def _low_gangs(count: int, *, size: int = 8, spread: list[list[str]]) -> tuple[list[Pod], list[PodGang]]:
    pods: list[Pod] = []
    gangs: list[PodGang] = []
    for i in range(count):
        members, pg = gang(f"low{i}", workers=size, gpus=1)
        pods += _bound(members, spread[i])
        gangs.append(_classed(pg, LOW))
    return pods, gangs


def _full_cluster(preemptor_class: str = HIGH) -> tuple[Harness, list[Pod]]:
    # Four low gangs of 8 × 1 GPU fill the 32 GPUs, one per node; the high gang asks for 8 × 1 GPU in one clique.
    pods, gangs = _low_gangs(4, spread=[["a0"], ["a1"], ["b0"], ["b1"]])
    high, pg = gang("high", workers=8, gpus=1, required=CLIQUE)
    h = harness(
        nodes=_nodes(),
        pods=pods + high,
        podgangs=[*gangs, _classed(pg, preemptor_class)],
        priority_classes=CLASSES,
    )
    return h, high


def _evicted(h: Harness) -> set[str]:
    return {f"{e.namespace}/{e.name}" for e in h.writer.evictions}


async def _bind_all(h: Harness, pods: list[Pod]) -> list[dict[str, Any]]:
    """Filter every member (each must get its one planned node), then send their bind calls together, as
    kube-scheduler's binding goroutines do."""
    async with h.client() as client:
        nodes = []
        for p in pods:
            reply = await filter_one(client, p, NAMES)
            assert len(reply["NodeNames"]) == 1, reply
            nodes.append(reply["NodeNames"][0])
        binds = [client.post("/bind", json=bind_body(p, n)) for p, n in zip(pods, nodes, strict=True)]
        return [reply.json() for reply in await asyncio.gather(*binds)]


def test_a_high_priority_gang_on_a_full_cluster_evicts_exactly_one_whole_low_gang_and_binds_whole() -> None:
    h, high = _full_cluster()
    h.coordinator.plan_ahead(GangRef("default", "high"))
    h.settle()
    evicted = _evicted(h)
    # 8 GPUs needed, every low gang holds 8 on one node: the cheapest choice is one low gang, whole.
    assert len(evicted) == 8 and len({key.split("-w")[0] for key in evicted}) == 1, evicted
    victim = next(iter(evicted)).split("/")[1].split("-w")[0]
    states = {g["gang"]: g for g in h.coordinator.debug_gangs()}
    assert states["default/high"]["state"] == "Preempting"
    # Each victim has an Event naming the preemptor; the victim's PodGang says it was preempted.
    preempted = [e for e in h.writer.events if e.reason == "Preempted" and e.kind == "Pod"]
    assert {f"{e.namespace}/{e.name}" for e in preempted} == evicted
    assert all("PodGang default/high (priority 1000)" in e.message for e in preempted)
    assert any(e.kind == "PodGang" and e.name == "high" and e.reason == "Preempting" for e in h.writer.events)
    status = dict(h.writer.statuses)[f"default/{victim}"]
    assert any(c["reason"] == "Preempted" for c in status["conditions"])
    # The kubelets finish the evictions: the gang may go where its victims were, and binds whole.
    h.writer.finalize_evictions()
    assert {g["gang"]: g["state"] for g in h.coordinator.debug_gangs()}["default/high"] == "Planned"
    run(lambda: _bind_all(h, high))
    h.settle()
    bound = h.writer.bound_nodes()
    # Where the victim ran (low{i} filled node i of a0, a1, b0, b1), and nowhere else.
    assert {bound[p.key] for p in high} == {NAMES[int(victim.removeprefix("low"))]}
    # Every other low gang is untouched.
    assert {p.key for p in h.store.pods() if p.spec.nodeName and "low" in p.key and p.deleting} == set()
    assert_no_overcommit(h.store)


def test_a_gang_that_may_not_preempt_evicts_nothing_and_waits() -> None:
    h, _ = _full_cluster(CALM)
    h.coordinator.plan_ahead(GangRef("default", "high"))
    h.settle()
    assert h.writer.evictions == []
    state = {g["gang"]: g for g in h.coordinator.debug_gangs()}["default/high"]
    assert state["state"] in ("Infeasible", "Waiting")


def test_reservations_of_a_lower_gang_yield_before_anything_is_evicted() -> None:
    # The cluster is empty; two low gangs of 16 × 1 GPU (one NVLink domain each) are planned, not bound. The high
    # gang of 8 (one domain) arrives: one low gang gives its reservations back, nothing is evicted, and the low
    # gang waits saying for whom.
    lows = [gang(f"low{i}", workers=16, gpus=1, required=CLIQUE) for i in range(2)]
    high, pg = gang("high", workers=8, gpus=1, required=CLIQUE)
    h = harness(
        nodes=_nodes(),
        pods=[p for members, _ in lows for p in members] + high,
        podgangs=[_classed(g, LOW) for _, g in lows] + [_classed(pg, HIGH)],
        priority_classes=CLASSES,
        batch_size=1,
    )
    for i in range(2):
        h.coordinator.plan_ahead(GangRef("default", f"low{i}"))
    assert {g["gang"]: g["state"] for g in h.coordinator.debug_gangs()} == {
        "default/low0": "Planned",
        "default/low1": "Planned",
    }
    h.coordinator.plan_ahead(GangRef("default", "high"))
    h.settle()
    states = {g["gang"]: g for g in h.coordinator.debug_gangs()}
    assert h.writer.evictions == []
    assert states["default/high"]["state"] == "Planned"
    yielded = [key for key, g in states.items() if key != "default/high" and g["state"] == "Waiting"]
    assert len(yielded) == 1 and "PodGang default/high (priority 1000)" in states[yielded[0]]["reason"]
    assert any(e.reason == "Yielded" and f"default/{e.name}" == yielded[0] for e in h.writer.events)
    run(lambda: _bind_all(h, high))
    h.settle()
    assert all(p.key in h.writer.bound_nodes() for p in high)


def test_a_gang_is_never_left_below_its_minimum_only_its_extras_or_all_of_it() -> None:
    # One low gang of 8 on a0 with minReplicas 6 (2 extras), the rest full of higher-priority work (priority 5000
    # through its pods). The high gang (priority 1000) of 2 × 1 GPU: the low gang's 2 extras are enough, so only they
    # go (2 GPUs, not 8).
    low, low_pg = gang("low0", workers=8, gpus=1, min_replicas=6)
    others, other_pg = gang("busy", workers=24, gpus=1)
    others = [p.model_copy(update={"spec": p.spec.model_copy(update={"priority": 5000})}) for p in others]
    high, pg = gang("high", workers=2, gpus=1)
    h = harness(
        nodes=_nodes(),
        pods=_bound(low, ["a0"]) + _bound(others, ["a1", "b0", "b1"]) + high,
        podgangs=[_classed(low_pg, LOW), other_pg, _classed(pg, HIGH)],
        priority_classes=CLASSES,
    )
    h.coordinator.plan_ahead(GangRef("default", "high"))
    h.settle()
    evicted = _evicted(h)
    assert len(evicted) == 2 and all(key.startswith("default/low0-w") for key in evicted), evicted
    assert not any(key.startswith("default/busy") for key in evicted)
    # The low gang keeps its minimum: still Bound, never PartiallyBound.
    h.writer.finalize_evictions()
    state = {g["gang"]: g for g in h.coordinator.debug_gangs()}
    assert state.get("default/low0", {}).get("state") in (None, "Bound")


def test_a_disruption_budget_that_refuses_one_victim_evicts_nothing_and_the_gang_waits() -> None:
    h, _ = _full_cluster()
    for i in range(4):  # every low gang's first member is covered by a budget that allows no disruption
        h.writer.budgets[f"default/low{i}-w0"] = f"low{i}-pdb"
    h.coordinator.plan_ahead(GangRef("default", "high"))
    h.settle()
    assert h.writer.evictions == []
    state = {g["gang"]: g for g in h.coordinator.debug_gangs()}["default/high"]
    assert state["state"] in ("Waiting", "Infeasible")
    assert not any(p.deleting for p in h.store.pods())


def test_a_preemptor_deleted_mid_way_stops_the_evictions_and_frees_its_reservation() -> None:
    h, _ = _full_cluster()
    h.coordinator.plan_ahead(GangRef("default", "high"))
    # Planned and ordered, not evicted yet: the PodGang goes away before the reporter thread runs.
    assert {g["gang"]: g["state"] for g in h.coordinator.debug_gangs()}["default/high"] == "Preempting"
    pg = h.store.podgang("default/high")
    assert pg is not None
    h.store.apply("PodGang", "DELETED", pg)
    h.settle()
    assert h.writer.evictions == []
    assert h.coordinator.table.reservation_count() == 0


def test_victims_that_never_go_are_given_up_at_the_deadline_and_left_out_after() -> None:
    h, _ = _full_cluster()
    h.coordinator.plan_ahead(GangRef("default", "high"))
    h.settle()
    first = _evicted(h)
    assert len(first) == 8
    # The kubelets never finish: past the preemption's wait the plan is given up, saying why on the PodGang...
    h.clock.advance(h.coordinator.config.room.wait_seconds + 1)
    h.settle()
    abandoned = [e for e in h.writer.events if e.reason == "PreemptionAbandoned" and e.name == "high"]
    assert len(abandoned) == 1 and "did not go within 120s" in abandoned[0].message, abandoned
    # ...and the gang, tried again, does not count on the stuck pods' room: another low gang makes way, whole.
    second = _evicted(h) - first
    assert len(second) == 8 and len({key.split("-w")[0] for key in second}) == 1, second
    assert {g["gang"]: g["state"] for g in h.coordinator.debug_gangs()}["default/high"] == "Preempting"


def _budget(name: str, gang: str, allowed: int) -> PodDisruptionBudget:
    """A PodDisruptionBudget over one gang's pods (they carry grove.io/podgang), as the disruption controller left
    it: its generation observed, ``allowed`` evictions allowed."""
    return PodDisruptionBudget.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "generation": 1},
            "spec": {"selector": {"matchLabels": {"grove.io/podgang": gang}}},
            "status": {"observedGeneration": 1, "disruptionsAllowed": allowed},
        }
    )


def _protected(high_gang: PodGang, high: list[Pod], *, classes: list[str], allowed: list[int]) -> Harness:
    """Four low gangs of 8 × 1 GPU and minReplicas 6, low{i} on node i of a0, a1, b0, b1 with class ``classes[i]``,
    each behind a budget allowing ``allowed[i]`` evictions; and the high gang, pending."""
    pods: list[Pod] = []
    gangs: list[PodGang] = []
    for i, where in enumerate(NAMES):
        members, pg = gang(f"low{i}", workers=8, gpus=1, min_replicas=6)
        pods += _bound(members, [where])
        gangs.append(_classed(pg, classes[i]))
    h = harness(
        nodes=_nodes(), pods=pods + high, podgangs=[*gangs, _classed(high_gang, HIGH)], priority_classes=CLASSES
    )
    h.store.replace("PodDisruptionBudget", [_budget(f"low{i}-pdb", f"low{i}", n) for i, n in enumerate(allowed)])
    return h


def test_disruption_budgets_steer_the_choice_to_extras_they_allow() -> None:
    # Four low gangs of 8 × 1 GPU, minReplicas 6, one per node. The high gang needs 4 GPUs in one NVLink domain (2
    # nodes): 2 + 2 extras of one domain's two gangs, each left at its minimum of 6 (4 GPUs, cheaper than any whole
    # gang's 8). Domain A's gangs are the cheaper victims (priority 10, B's are 100), but their budgets allow no
    # eviction; B's allow 2 each: B's extras go, A is untouched.
    high, pg = gang("high", workers=4, gpus=1, required=CLIQUE)
    h = _protected(pg, high, classes=[BATCH, BATCH, LOW, LOW], allowed=[0, 0, 2, 2])
    h.coordinator.plan_ahead(GangRef("default", "high"))
    h.settle()
    evicted = _evicted(h)
    by_gang: dict[str, int] = {}
    for key in evicted:
        name = key.split("/")[1].split("-w")[0]
        by_gang[name] = by_gang.get(name, 0) + 1
    assert by_gang == {"low2": 2, "low3": 2}, by_gang
    h.writer.finalize_evictions()
    run(lambda: _bind_all(h, high))
    h.settle()
    assert {h.writer.bound_nodes()[p.key] for p in high} == {"b0", "b1"}
    states = {g["gang"]: g["state"] for g in h.coordinator.debug_gangs()}
    assert all(states.get(f"default/low{i}", "Bound") == "Bound" for i in range(4)), states


def test_a_gang_whose_only_room_would_break_a_protected_gang_waits_and_evicts_nothing() -> None:
    # The same four gangs and budgets; now the high gang needs 8 GPUs on one node: only a whole low gang frees a
    # node, its budget forbids that, and taking 8 of its pods any other way leaves it below its minimum.
    high, pg = gang("high", workers=8, gpus=1, required="kubernetes.io/hostname")
    h = _protected(pg, high, classes=[LOW] * 4, allowed=[2] * 4)
    h.coordinator.plan_ahead(GangRef("default", "high"))
    h.settle()
    assert h.writer.evictions == []
    state = {g["gang"]: g for g in h.coordinator.debug_gangs()}["default/high"]
    assert state["state"] in ("Infeasible", "Waiting")


def test_another_schedulers_pod_of_lower_priority_is_evicted_whole() -> None:
    # Every node full: a0 of a default-scheduler pod of priority 5 (8 GPUs), the others of gangs at priority 5000
    # (through their pods). The high gang of 8 × 1 GPU: that pod is the only victim below it.
    theirs = make_pod("web").scheduler("default-scheduler").priority(5).gpus(8).on("a0").obj()
    pods: list[Pod] = [theirs]
    gangs: list[PodGang] = []
    for i, where in enumerate(NAMES[1:]):
        members, pg = gang(f"busy{i}", workers=8, gpus=1)
        pods += [
            p.model_copy(update={"spec": p.spec.model_copy(update={"priority": 5000})})
            for p in _bound(members, [where])
        ]
        gangs.append(pg)
    high, pg = gang("high", workers=8, gpus=1)
    h = harness(nodes=_nodes(), pods=pods + high, podgangs=[*gangs, _classed(pg, HIGH)], priority_classes=CLASSES)
    h.coordinator.plan_ahead(GangRef("default", "high"))
    h.settle()
    assert _evicted(h) == {theirs.key}
    assert any(e.reason == "Preempted" and e.name == "web" and e.kind == "Pod" for e in h.writer.events)
    h.writer.finalize_evictions()
    run(lambda: _bind_all(h, high))
    h.settle()
    assert {h.writer.bound_nodes()[p.key] for p in high} == {"a0"}


def test_a_refused_gang_that_fits_as_things_are_is_planned_the_usual_way() -> None:
    # The gang's refusal is older than the room freed since (nothing was ever evicted or yielded for it): making
    # room finds it fits without any victim and hands it back to the planner, which plans it as any other gang.
    high, pg = gang("high", workers=8, gpus=1, required=CLIQUE)
    h = harness(nodes=_nodes(), pods=high, podgangs=[_classed(pg, HIGH)], priority_classes=CLASSES)
    ref = GangRef("default", "high")
    table = h.coordinator.table
    table.infeasible(ref, reason="no room (an old decision)", proven=True, basis=table.planning_basis(ref, now=0))
    assert h.coordinator.planner.make_room(ref) is Room.FITS
    assert {g["gang"]: g["state"] for g in h.coordinator.debug_gangs()}["default/high"] == "Planned"
    made = h.coordinator.metrics.preemptions
    assert all(made.labels(outcome)._value.get() == 0 for outcome in ("yielded", "evicting"))
    assert h.writer.evictions == []


def test_refused_gangs_are_swept_once_a_second_however_often_the_planner_ticks() -> None:
    # The planner's tick follows every batch of work (hundreds a second under load): each sweep reads every gang's
    # state, so it must not run with each tick (bench_e2e --real found it most of the planner thread's CPU).
    h, _ = _full_cluster(CALM)
    h.coordinator.plan_ahead(GangRef("default", "high"))  # refused: a Never gang on a full cluster
    tried: list[GangRef] = []

    def counting(ref: GangRef) -> Room:
        tried.append(ref)
        return Room.NONE

    room = h.coordinator.planner.room
    room.sweep(counting)
    room.sweep(counting)
    assert tried == [GangRef("default", "high")]
    h.clock.advance(1.0)
    room.sweep(counting)
    assert len(tried) == 2


def test_a_high_gang_whose_pods_are_still_gated_makes_no_room_until_they_are_not() -> None:
    # Grove creates a gang's pods gated and lifts the gates once its PodGang exists: until then no room made would
    # place them, so nothing is evicted and the sweep passes the gang by. Lifted, the same gang evicts as above.
    pods, gangs = _low_gangs(4, spread=[["a0"], ["a1"], ["b0"], ["b1"]])
    high, pg = gang("high", workers=8, gpus=1, required=CLIQUE)
    gate = {"schedulingGates": [{"name": "example.com/quota"}]}  # a gate of someone else's: Grove's is planned through
    gated = [p.model_copy(update={"spec": p.spec.model_validate({**p.spec.model_dump(), **gate})}) for p in high]
    h = harness(nodes=_nodes(), pods=pods + gated, podgangs=[*gangs, _classed(pg, HIGH)], priority_classes=CLASSES)
    ref = GangRef("default", "high")
    h.coordinator.plan_ahead(ref)
    h.settle()
    assert {g["gang"]: g["state"] for g in h.coordinator.debug_gangs()}["default/high"] == "Waiting"
    assert h.coordinator.table.refused() == []
    assert h.coordinator.planner.make_room(ref) is Room.NONE
    assert h.writer.evictions == []
    for pod in high:
        h.store.apply("Pod", "MODIFIED", pod)
    h.coordinator.plan_ahead(ref)
    h.settle()
    assert len(_evicted(h)) == 8
