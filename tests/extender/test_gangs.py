"""The gang rules, through the HTTP app on an in-memory cluster."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx

from api.core import Pod, PriorityClass
from placement import solve
from placement.request import ClusterView, GangRequest, Result, SolveOptions, Status
from scheduler.extender.coordinator.members import gang_ref_of
from tests.extender_support import (
    CLIQUE,
    PATIENCE_SECONDS,
    assert_no_overcommit,
    bind_body,
    filter_one,
    gang,
    harness,
    node,
    pod,
    podgang,
    run,
)


def _cluster() -> list:
    # Two NVLink domains of 2 nodes × 8 GPUs (16 GPUs each) and a lone node of 8 GPUs.
    return [
        node("a0", clique="A"),
        node("a1", clique="A"),
        node("b0", clique="B"),
        node("b1", clique="B"),
        node("c0", clique="C"),
    ]


NAMES = ["a0", "a1", "b0", "b1", "c0"]


def test_members_are_pinned_to_one_planned_node_each_and_prioritize_agrees() -> None:
    pods, pg = gang("train", workers=4, gpus=4, required=CLIQUE)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg])

    async def main() -> None:
        async with h.client() as client:
            planned = {}
            for p in pods:
                reply = await filter_one(client, p, NAMES)
                assert len(reply["NodeNames"]) == 1, reply
                assert reply["FailedNodes"] == {}
                planned[p.key] = reply["NodeNames"][0]
                scores = (
                    await client.post("/prioritize", json={"Pod": p.model_dump(mode="json"), "NodeNames": NAMES})
                ).json()
                assert {s["Host"]: s["Score"] for s in scores} == {n: 10 if n == planned[p.key] else 0 for n in NAMES}
            # 4 pods × 4 GPUs = 16 GPUs: exactly one whole NVLink domain, never split.
            cliques = {h.store.node(n).metadata.labels[CLIQUE] for n in planned.values()}
            assert len(cliques) == 1
            # Asking again gives the same node: the plan is a reservation, not a fresh guess.
            again = await filter_one(client, pods[0], NAMES)
            assert again["NodeNames"] == [planned[pods[0].key]]

    run(main)


async def _filter_then_bind(client: httpx.AsyncClient, p, names) -> dict:
    reply = await filter_one(client, p, names)
    if not reply["NodeNames"]:
        return {"filtered": reply}
    bound = await client.post("/bind", json=bind_body(p, reply["NodeNames"][0]))
    return bound.json()


def test_no_bind_completes_until_every_guaranteed_member_reaches_bind() -> None:
    pods, pg = gang("g", workers=3, gpus=8)
    # Fake time: a bind call cannot stop waiting while the machine is slow, only when the test moves the clock.
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], fake_time=True)

    async def main() -> None:
        async with h.client() as client:
            first = [asyncio.create_task(_filter_then_bind(client, p, NAMES)) for p in pods[:2]]
            await h.clock.until_sleeping(2)  # both bind calls wait for their gang
            assert not any(task.done() for task in first), "a bind answered before the gang was complete"
            assert h.writer.bindings == []
            last = await _filter_then_bind(client, pods[2], NAMES)
            results = [*await asyncio.gather(*first), last]
            assert all(r == {"Error": ""} for r in results), results
            assert set(h.writer.bound_nodes()) == {p.key for p in pods}
            assert_no_overcommit(h.store)
        h.background()  # the status is written by the background worker, after the binds were answered
        status = h.store.podgang("default/g").status
        assert status is not None and status.phase == "Starting"
        assert [(c.type, c.status) for c in status.conditions] == [("Scheduled", "True")]
        assert [(e.kind, e.name, e.reason) for e in h.writer.events] == [("PodGang", "g", "Scheduled")]
        assert h.coordinator.debug_gangs()[0]["state"] == "Bound"

    run(main)


def test_a_member_whose_call_stopped_waiting_stays_ready_and_is_bound_when_the_gang_completes() -> None:
    pods, pg = gang("g", workers=3, gpus=8)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], bind_wait=2, fake_time=True)

    async def main() -> None:
        async with h.client() as client:
            early = asyncio.create_task(_filter_then_bind(client, pods[0], NAMES))
            await h.clock.until_sleeping(1)
            h.clock.advance(2)  # its wait is over: kube-scheduler gets an answer well within its httpTimeout
            answer = await early
            # 1 of 3 ready: "waits for 2 more", and nothing is bound yet.
            assert "is ready on" in answer["Error"] and "waits for 2 more: group worker 1 of 3" in answer["Error"]
            assert h.writer.bindings == []
            # kube-scheduler backs that pod off; it is not asked about again. The other two arrive later.
            rest = await asyncio.gather(*(_filter_then_bind(client, p, NAMES) for p in pods[1:]))
            assert rest == [{"Error": ""}, {"Error": ""}]
        # The release bound the early member too, although its own call had been answered.
        assert set(h.writer.bound_nodes()) == {p.key for p in pods}
        assert h.coordinator.metrics.bind_waits_expired._value.get() == 1

    run(main)


def test_a_ready_member_asked_about_again_is_told_to_retry_and_a_bound_one_gets_its_node() -> None:
    pods, pg = gang("g", workers=2, gpus=8)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], bind_wait=1, fake_time=True)

    async def main() -> None:
        async with h.client() as client:
            early = asyncio.create_task(_filter_then_bind(client, pods[0], NAMES))
            await h.clock.until_sleeping(1)
            h.clock.advance(1)
            await early
            # After its backoff kube-scheduler filters the ready member again: Error (no binding cycle), not its node.
            again = await filter_one(client, pods[0], NAMES)
            assert again["NodeNames"] is None or again["NodeNames"] == []
            assert "is ready on" in again["Error"]
            assert await _filter_then_bind(client, pods[1], NAMES) == {"Error": ""}
            # Bound now (the in-memory watch shows it): a late filter or bind for it is success, not an error.
            node = h.writer.bound_nodes()[pods[0].key]
            assert (await filter_one(client, pods[0], NAMES))["NodeNames"] == [node]
            assert (await client.post("/bind", json=bind_body(pods[0], node))).json() == {"Error": ""}
        assert len(h.writer.bindings) == 2

    run(main)


def test_best_effort_extras_bind_after_the_guarantee_without_waiting() -> None:
    pods, pg = gang("g", workers=3, gpus=4, min_replicas=2)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], fake_time=True)

    async def main() -> None:
        async with h.client() as client:
            guaranteed = await asyncio.gather(*(_filter_then_bind(client, p, NAMES) for p in pods[:2]))
            assert guaranteed == [{"Error": ""}, {"Error": ""}]
            # The gang stands: the extra is bound by its own call, the clock never moving.
            extra = await _filter_then_bind(client, pods[2], NAMES)
            assert extra == {"Error": ""}
        assert len(h.writer.bindings) == 3

    run(main)


def test_two_gangs_racing_for_one_nvlink_domain_never_overcommit() -> None:
    # Each gang needs 12 GPUs in one clique; domains A and B hold 16 each, C only 8: both fit, but not together
    # in one domain. Interleave their filters and binds.
    pods_x, pg_x = gang("x", workers=3, gpus=4, required=CLIQUE)
    pods_y, pg_y = gang("y", workers=3, gpus=4, required=CLIQUE)
    pods_z, pg_z = gang("z", workers=3, gpus=4, required=CLIQUE)
    h = harness(nodes=_cluster(), pods=[*pods_x, *pods_y, *pods_z], podgangs=[pg_x, pg_y, pg_z], fake_time=True)

    async def main() -> None:
        async with h.client() as client:
            order = [p for trio in zip(pods_x, pods_y, pods_z, strict=True) for p in trio]
            results = await asyncio.gather(*(_filter_then_bind(client, p, NAMES) for p in order))
        assert_no_overcommit(h.store)
        bound = h.writer.bound_nodes()
        for pods in (pods_x, pods_y, pods_z):
            placed = [bound[p.key] for p in pods if p.key in bound]
            assert len(placed) in (0, 3), f"partial gang: {placed}"
            assert len({h.store.node(n).metadata.labels[CLIQUE] for n in placed}) <= 1
        # Two domains of 16 GPUs: exactly two of the three gangs fit; the third is refused on every node.
        assert len(bound) == 6
        refused = [r["filtered"] for r in results if "filtered" in r]
        assert refused and all(set(r["FailedNodes"]) == set(NAMES) for r in refused)

    run(main)


def test_infeasible_gang_gets_one_actionable_reason_on_every_node() -> None:
    pods, pg = gang("big", workers=5, gpus=4, required=CLIQUE)  # 20 GPUs in one clique; the largest has 16
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg])

    async def main() -> None:
        async with h.client() as client:
            replies = [await filter_one(client, p, NAMES) for p in pods]
        for reply in replies:
            assert reply["NodeNames"] == []
            reasons = set(reply["FailedNodes"].values())
            assert set(reply["FailedNodes"]) == set(NAMES) and len(reasons) == 1
            (reason,) = reasons
            assert "20" in reason and "16" in reason, reason
        assert h.coordinator.debug_gangs()[0]["state"] == "Infeasible"

    run(main)


def test_gang_waits_for_its_gated_or_missing_guaranteed_pods() -> None:
    # Someone else's gate (a quota system's): Grove's own is planned through (translation's module docstring).
    pods, pg = gang("g", workers=3, gpus=4)
    gated = pod("g-w2", gang="g", gpus=4, gated="example.com/quota")
    h = harness(nodes=_cluster(), pods=[pods[0], gated], podgangs=[pg])

    async def main() -> None:
        async with h.client() as client:
            reply = await filter_one(client, pods[0], NAMES)
            assert reply["NodeNames"] == []
            assert "1 not created yet, 1 still gated" in next(iter(reply["FailedNodes"].values()))
            # The missing pod appears and the gated one is released: the gang becomes plannable.
            h.store.apply("Pod", "ADDED", pods[1])
            h.store.apply("Pod", "MODIFIED", pods[2])
            reply = await filter_one(client, pods[0], NAMES)
            assert len(reply["NodeNames"]) == 1

    run(main)


def test_planned_node_refused_by_kube_scheduler_is_replanned_elsewhere() -> None:
    p = pod("solo", gpus=8)
    h = harness(nodes=_cluster(), pods=[p])

    async def main() -> None:
        async with h.client() as client:
            first = (await filter_one(client, p, NAMES))["NodeNames"][0]
            others = [n for n in NAMES if n != first]
            second = await filter_one(client, p, others)
            assert second["NodeNames"] and second["NodeNames"][0] in others
            assert h.coordinator.metrics.replans.labels("node_refused")._value.get() == 1

    run(main)


def test_preemption_never_breaks_a_bound_gang() -> None:
    workers = [pod(f"g-w{i}", gang="g", gpus=4, node_name=f"a{i}") for i in range(2)]
    pg = podgang("g", {"worker": ([w.metadata.name for w in workers], 2)})
    filler = pod("filler", gpus=4, node_name="a0")
    h = harness(nodes=_cluster(), pods=[*workers, filler], podgangs=[pg])
    urgent = pod("urgent", gpus=8)
    body = {
        "Pod": urgent.model_dump(mode="json"),
        "NodeNameToMetaVictims": {
            "a0": {"Pods": [{"UID": filler.metadata.uid}, {"UID": workers[0].metadata.uid}], "NumPDBViolations": 0},
            "a1": {"Pods": [{"UID": workers[1].metadata.uid}], "NumPDBViolations": 0},
            "b0": {"Pods": [{"UID": "unknown-uid"}], "NumPDBViolations": 1},
        },
    }

    async def main() -> None:
        async with h.client() as client:
            reply = (await client.post("/preempt", json=body)).json()
        assert set(reply["NodeNameToMetaVictims"]) == {"b0"}
        assert reply["NodeNameToMetaVictims"]["b0"] == {"Pods": [{"UID": "unknown-uid"}], "NumPDBViolations": 1}
        assert h.coordinator.metrics.preemption_vetoes._value.get() == 2

    run(main)


def test_restart_rebuilds_state_from_bound_pods_and_replans_the_rest() -> None:
    pods, pg = gang("g", workers=4, gpus=8, min_replicas=2)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], fake_time=True)

    async def first_life() -> None:
        async with h.client() as client:
            results = await asyncio.gather(*(_filter_then_bind(client, p, NAMES) for p in pods[:2]))
            assert results == [{"Error": ""}, {"Error": ""}]

    run(first_life)
    bound_before = h.writer.bound_nodes()
    # A new process over the same cluster state: no plans, no reservations, the bound pods are facts.
    again = harness(nodes=(), store=h.store, fake_time=True)

    async def second_life() -> None:
        async with again.client() as client:
            for p in pods[2:]:
                reply = await filter_one(client, p, NAMES)
                (chosen,) = reply["NodeNames"]
                assert chosen not in bound_before.values()  # 8-GPU pods cannot share a node already full
                # The guarantee (2) is met by bound members: the extra is bound by its own call.
                assert (await client.post("/bind", json=bind_body(p, chosen))).json() == {"Error": ""}
        assert_no_overcommit(again.store)

    run(second_life)


def test_bind_for_a_node_other_than_the_plan_is_refused() -> None:
    p = pod("solo", gpus=8)
    h = harness(nodes=_cluster(), pods=[p])

    async def main() -> None:
        async with h.client() as client:
            planned = (await filter_one(client, p, NAMES))["NodeNames"][0]
            other = next(n for n in NAMES if n != planned)
            reply = (await client.post("/bind", json=bind_body(p, other))).json()
            assert f"planned on {planned}" in reply["Error"]
            assert h.writer.bindings == []

    run(main)


def test_a_member_whose_planned_node_kube_scheduler_refuses_moves_the_gang_and_the_ready_member_follows() -> None:
    # Two 8-GPU pods in one clique; domains A and B have two 8-GPU nodes each.
    pods, pg = gang("g", workers=2, gpus=8, required=CLIQUE)
    h = harness(nodes=_cluster()[:4], pods=pods, podgangs=[pg], fake_time=True)
    names = NAMES[:4]

    async def main() -> None:
        async with h.client() as client:
            first = (await filter_one(client, pods[0], names))["NodeNames"][0]
            waiting = asyncio.create_task(client.post("/bind", json=bind_body(pods[0], first)))
            await h.clock.until_sleeping(1)  # the first member is ready and its call waits
            planned = h.coordinator.table.member("default/g", pods[1].key).planned
            # kube-scheduler's own filters refuse the second member's planned node: around the ready first member
            # (its clique has no other room) the gang cannot be placed, so it is planned afresh in the other
            # clique, and the first member, moved, is no longer ready.
            moved = await filter_one(client, pods[1], [n for n in names if n != planned])
            (second_node,) = moved["NodeNames"]
            assert h.store.node(second_node).metadata.labels[CLIQUE] != h.store.node(first).metadata.labels[CLIQUE]
            h.clock.advance(h.coordinator.config.bind_wait_seconds)
            assert "lost its place" in (await waiting).json()["Error"]
            assert h.writer.bindings == []
            # kube-scheduler retries the first member: it gets its new node, and the gang binds whole.
            (new_first,) = (await filter_one(client, pods[0], names))["NodeNames"]
            binds = [
                client.post("/bind", json=bind_body(p, n)) for p, n in ((pods[0], new_first), (pods[1], second_node))
            ]
            results = [reply.json() for reply in await asyncio.gather(*binds)]
            assert results == [{"Error": ""}, {"Error": ""}], results
        bound = h.writer.bound_nodes()
        assert planned not in bound.values()
        assert len({h.store.node(n).metadata.labels[CLIQUE] for n in bound.values()}) == 1
        assert h.coordinator.metrics.replans.labels("node_refused")._value.get() == 1

    run(main)


def test_a_filter_during_an_in_flight_replan_waits_for_it_instead_of_answering_the_stale_refusal() -> None:
    # The first plan says Infeasible; a re-plan (the background worker's, after some cluster change) is then under
    # way and will find room. A filter arriving meanwhile must not answer the old refusal: kube-scheduler would
    # back the pod off for up to 10 s although its node is about to be known.
    pods, pg = gang("late", workers=1, gpus=8)
    replanning, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def solver(request: GangRequest, view: ClusterView, options: SolveOptions) -> Result:
        calls.append(request.key)
        if len(calls) == 1:
            return Result(status=Status.INFEASIBLE, reason="stale refusal: no room yet")
        replanning.set()
        assert release.wait(PATIENCE_SECONDS)
        return solve(request, view, options)

    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], solver=solver)

    async def main() -> dict:
        async with h.client() as client:
            first = await filter_one(client, pods[0], NAMES)
            assert first["NodeNames"] == [] and "stale refusal" in first["FailedNodes"]["a0"]
            worker = threading.Thread(
                target=h.coordinator.planner.plan, args=(gang_ref_of(pods[0]),), kwargs={"force": True}
            )
            worker.start()
            assert await asyncio.to_thread(replanning.wait, PATIENCE_SECONDS)
            pending = asyncio.create_task(filter_one(client, pods[0], NAMES))
            # Give the filter every chance to answer early (the bug answered at once); then let the re-plan finish.
            await asyncio.wait({pending}, timeout=1.0)
            release.set()
            reply = await pending
            await asyncio.to_thread(worker.join, PATIENCE_SECONDS)
            return reply

    reply = run(main)
    assert len(reply["NodeNames"]) == 1, reply
    assert len(calls) == 2  # the filter waited for the worker's plan instead of solving a third time


def _prioritised(pods: list, priority: int) -> list:
    return [p.model_copy(update={"spec": p.spec.model_copy(update={"priority": priority})}) for p in pods]


def test_the_head_of_the_queue_is_planned_together_by_priority_then_age() -> None:
    # One NVLink domain of 2 × 8 GPUs: room for one gang of 2 × 8. Three wait, oldest first: a (priority 0),
    # b (50), c (100). With a head of 2, the batch holds c and b (highest first): c starts, b waits saying c took
    # the capacity, and a, beyond the head, is not decided yet. Planned one at a time in arrival order, a would
    # have taken it.
    gangs = [gang(name, workers=2, gpus=8) for name in ("a", "b", "c")]
    pods = [
        p for (members, _), priority in zip(gangs, (0, 50, 100), strict=True) for p in _prioritised(members, priority)
    ]
    h = harness(
        nodes=[node("a0", clique="A"), node("a1", clique="A")], pods=pods, podgangs=[g for _, g in gangs], batch_size=2
    )
    h.coordinator.plan_ahead(gang_ref_of(gangs[0][0][0]))  # the worker plans the oldest first
    states = {g["gang"]: (g["state"], g["reason"]) for g in h.coordinator.debug_gangs()}
    assert set(states) == {"default/b", "default/c"}
    assert states["default/c"][0] == "Planned"
    assert states["default/b"][0] == "Waiting" and "default/c" in states["default/b"][1]
    one = harness(
        nodes=[node("a0", clique="A"), node("a1", clique="A")], pods=pods, podgangs=[g for _, g in gangs], batch_size=1
    )
    one.coordinator.plan_ahead(gang_ref_of(gangs[0][0][0]))
    assert {g["gang"]: g["state"] for g in one.coordinator.debug_gangs()}["default/a"] == "Planned"


def test_the_queue_follows_the_podgangs_priority_class_not_the_pods() -> None:
    # As Grove makes them: the PodCliqueSet's class is on the PodGang, the pods carry priority 0. Room for one gang
    # of 2 × 8; a (oldest, no class), b (class "batch", 50), c (class "serving", 1000). c is planned, b waits
    # for it, a is beyond a head of 2.
    classes = [
        PriorityClass.model_validate({"metadata": {"name": name}, "value": value})
        for name, value in (("batch", 50), ("serving", 1000))
    ]
    gangs = [gang(name, workers=2, gpus=8) for name in ("a", "b", "c")]
    podgangs = [
        pg.model_copy(update={"spec": pg.spec.model_copy(update={"priorityClassName": cls})})
        for (_, pg), cls in zip(gangs, (None, "batch", "serving"), strict=True)
    ]
    pods = [p for members, _ in gangs for p in _prioritised(members, 0)]
    h = harness(
        nodes=[node("a0", clique="A"), node("a1", clique="A")],
        pods=pods,
        podgangs=podgangs,
        priority_classes=classes,
        batch_size=2,
    )
    h.coordinator.plan_ahead(gang_ref_of(gangs[0][0][0]))
    states = {g["gang"]: (g["state"], g["reason"]) for g in h.coordinator.debug_gangs()}
    assert set(states) == {"default/b", "default/c"}
    assert states["default/c"][0] == "Planned"
    assert states["default/b"][0] == "Waiting" and "default/c" in states["default/b"][1]


def _preempt_body(preemptor: Pod, proposal: dict[str, list[str]], *, priority: int) -> dict[str, Any]:
    pod_json = preemptor.model_dump(mode="json")
    pod_json["spec"]["priority"] = priority
    victims = {node: {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": 0} for node, uids in proposal.items()}
    return {"Pod": pod_json, "NodeNameToMetaVictims": victims}


def test_the_preempt_verb_takes_whole_lower_gangs_and_spares_higher_ones() -> None:
    # Gang "low" (no class: priority 0) has both members on a0, a whole gang there; gang "vip" (class 1000 on its
    # PodGang, its pods at priority 0 as Grove makes them) has one member on b0. A pod of priority 100 (a default
    # scheduler's, or ours of no gang) is proposed each: low may go whole; vip's priority is not below 100.
    low = [pod(f"low-w{i}", gang="low", gpus=4, node_name="a0") for i in range(2)]
    vip = pod("vip-w0", gang="vip", gpus=8, node_name="b0")
    vip_gang = podgang("vip", {"worker": (["vip-w0"], 1)})
    vip_gang = vip_gang.model_copy(update={"spec": vip_gang.spec.model_copy(update={"priorityClassName": "vip"})})
    h = harness(
        nodes=_cluster(),
        pods=[*low, vip],
        podgangs=[podgang("low", {"worker": ([p.metadata.name for p in low], 2)}), vip_gang],
        priority_classes=[PriorityClass.model_validate({"metadata": {"name": "vip"}, "value": 1000})],
    )
    urgent = pod("urgent", gpus=8)
    body = _preempt_body(urgent, {"a0": [p.metadata.uid for p in low], "b0": [vip.metadata.uid]}, priority=100)

    async def main() -> dict[str, Any]:
        async with h.client() as client:
            return (await client.post("/preempt", json=body)).json()

    reply = run(main)
    assert set(reply["NodeNameToMetaVictims"]) == {"a0"}


def test_the_preempt_verb_leaves_our_gangs_preemption_to_the_extender() -> None:
    # A member of a gang this profile places: kube-scheduler's per-pod proposal is answered with no victims, and the
    # gang is queued for the extender's own preemption (the two must never evict for the same gang).
    filler = pod("filler", gpus=8, node_name="a0")
    members, pg = gang("g", workers=1, gpus=8)
    h = harness(nodes=_cluster(), pods=[filler, *members], podgangs=[pg])
    body = _preempt_body(members[0], {"a0": [filler.metadata.uid]}, priority=100)

    async def main() -> dict[str, Any]:
        async with h.client() as client:
            return (await client.post("/preempt", json=body)).json()

    assert run(main) == {"NodeNameToMetaVictims": {}}
    assert ("preempt", gang_ref_of(members[0])) in h.coordinator.work.take(0.0, ("preempt",))


def _plans(h: Any) -> float:
    return sum(
        sample.value for sample in h.coordinator.metrics.plans.collect()[0].samples if sample.name.endswith("_total")
    )


def test_a_gang_held_by_groves_gate_is_planned_once_and_its_gates_lifting_is_no_news() -> None:
    # Grove's flow: the pods exist gated, the PodGang appears, the reconciler lifts the gates one by one. The gang is
    # planned when its PodGang appears; each lift is no reason to plan it again, and the first pod kube-scheduler
    # offers goes to its planned node.
    pods, pg = gang("g", workers=3, gpus=4)
    gated = [pod(p.metadata.name, gang="g", gpus=4, gated=True) for p in pods]
    h = harness(nodes=_cluster(), pods=[], podgangs=[])
    for member in gated:
        h.store.apply("Pod", "ADDED", member)
    h.store.apply("PodGang", "ADDED", pg)
    h.settle()
    assert {g["gang"]: g["state"] for g in h.coordinator.debug_gangs()}["default/g"] == "Planned"
    planned = _plans(h)
    for ungated in pods:
        h.store.apply("Pod", "MODIFIED", ungated)
        h.settle()
    assert _plans(h) == planned

    async def main() -> None:
        async with h.client() as client:
            reply = await filter_one(client, pods[0], NAMES)
            assert len(reply["NodeNames"]) == 1

    run(main)


def test_the_queue_is_sorted_again_once_a_podgang_comes_or_goes() -> None:
    # The head's queue is kept sorted between plans while no PodGang changes; a PodGang that arrives older (here
    # earlier by name, none has a timestamp) joins it in its place, and one deleted leaves it.
    gangs = {name: gang(name, workers=2, gpus=8) for name in ("a", "b", "c")}
    h = harness(
        nodes=[node("a0", clique="A"), node("a1", clique="A")],
        pods=[p for name in ("b", "c") for p in gangs[name][0]],
        podgangs=[gangs[name][1] for name in ("b", "c")],
        batch_size=4,
    )
    head = h.coordinator.planner._head  # the queue the planner's head is taken from
    ref = gang_ref_of(gangs["c"][0][0])

    def queue() -> list[str]:
        return [r.name for r in head.waiting_with(ref)[0]]

    assert queue() == ["b", "c"]
    for member in gangs["a"][0]:
        h.store.apply("Pod", "ADDED", member)
    h.store.apply("PodGang", "ADDED", gangs["a"][1])
    assert queue() == ["a", "b", "c"]
    h.store.apply("PodGang", "DELETED", gangs["b"][1])
    assert queue() == ["a", "c"]
