"""Only the API's truth moves state (issue 10's coordinator findings): calls for pods the store does not know, or
with another UID, leave nothing behind; a node is excluded only on kube-scheduler's own refusal for a known member;
records of gangs that are gone are dropped; a deleted PodGang answers its waiting bind calls at once; a standby
proposes nothing; /healthz tells a dead planner or watch."""

from __future__ import annotations

import asyncio

from api.extender import ExtenderArgs, ExtenderBindingArgs, ExtenderPreemptionArgs, PodRef
from tests.extender_support import (
    SyncClient,
    bind_body,
    filter_body,
    filter_one,
    gang,
    harness,
    node,
    pod,
    run,
)

NODES = [node("a0"), node("a1"), node("b0")]
NAMES = ["a0", "a1", "b0"]


def test_twenty_thousand_filters_and_binds_for_pods_nobody_created_leave_the_table_as_it_was() -> None:
    pods, pg = gang("g", workers=2, gpus=8)
    h = harness(nodes=NODES, pods=pods, podgangs=[pg])

    async def main() -> list[str]:
        errors = []
        for i in range(20_000):
            ghost = pod(f"ghost-{i}", gang="g" if i % 2 else None, gpus=8)
            reply = await h.coordinator.filter(ExtenderArgs(Pod=PodRef.of(ghost), NodeNames=NAMES))
            errors.append(reply.Error)
            assert reply.NodeNames is None and reply.FailedNodes == {}  # Error, not parked
        bind = await h.coordinator.bind(
            ExtenderBindingArgs(PodName="ghost-1", PodNamespace="default", PodUID="uid-default-ghost-1", Node="a0")
        )
        errors.append(bind.Error)
        return errors

    errors = run(main)
    assert all("not known" in error for error in errors)
    assert h.coordinator.debug_gangs() == [] and h.coordinator.table.reservation_count() == 0
    assert h.writer.bindings == []


def test_a_call_with_another_uid_than_the_stored_pod_changes_nothing() -> None:
    pods, pg = gang("g", workers=2, gpus=8)
    h = harness(nodes=NODES, pods=pods, podgangs=[pg])

    async def main() -> None:
        async with h.client() as client:
            planned = (await filter_one(client, pods[0], NAMES))["NodeNames"][0]
            impostor = pods[0].model_copy(update={"metadata": pods[0].metadata.model_copy(update={"uid": "forged"})})
            # Omitting the planned node would exclude it, were this kube-scheduler's own refusal of a known pod.
            reply = await filter_one(client, impostor, [n for n in NAMES if n != planned])
            assert "not the one grove-extender knows" in reply["Error"]
            forged = {**bind_body(pods[0], planned), "PodUID": "forged"}
            assert "not the one" in (await client.post("/bind", json=forged)).json()["Error"]
            assert h.coordinator.table.member("default/g", pods[0].key).planned == planned  # type: ignore[union-attr]
            assert (await filter_one(client, pods[0], NAMES))["NodeNames"] == [planned]
        assert h.coordinator.metrics.replans.labels("node_refused")._value.get() == 0

    run(main)


def test_an_exclusion_lasts_only_its_bounded_time() -> None:
    p = pod("solo", gpus=8)
    h = harness(nodes=NODES[:2], pods=[p])
    client = SyncClient(h.app)
    first = client.post("/filter", json=filter_body(p, ["a0", "a1"])).json()["NodeNames"][0]
    other = "a1" if first == "a0" else "a0"
    # kube-scheduler's own filters refuse the planned node: the member moves.
    assert client.post("/filter", json=filter_body(p, [other])).json()["NodeNames"] == [other]
    basis = h.coordinator.table.planning_basis(h.coordinator.table.summary("pod:default/solo").ref, now=h.clock.now)  # type: ignore[union-attr]
    assert basis.excluded == {"pod": frozenset({first})}
    later = h.coordinator.table.planning_basis(
        h.coordinator.table.summary("pod:default/solo").ref,  # type: ignore[union-attr]
        now=h.clock.now + h.coordinator.config.exclusion_seconds,
    )
    assert later.excluded == {"pod": frozenset()}


def test_records_of_gangs_whose_podgang_and_pods_are_gone_are_dropped() -> None:
    orphan = pod("orphan", gang="nowhere", gpus=1)
    h = harness(nodes=NODES, pods=[orphan])
    client = SyncClient(h.app)
    assert "does not exist yet" in client.post("/filter", json=filter_body(orphan, NAMES)).json()["Error"]
    assert [g["gang"] for g in h.coordinator.debug_gangs()] == ["default/nowhere"]  # waiting, as it should
    h.store.apply("Pod", "DELETED", orphan)
    assert h.coordinator.debug_gangs() == []


def test_a_deleted_podgang_answers_its_waiting_bind_calls_at_once() -> None:
    pods, pg = gang("g", workers=2, gpus=8)
    h = harness(nodes=NODES, pods=pods, podgangs=[pg], bind_wait=3600, fake_time=True)

    async def main() -> dict[str, str]:
        async with h.client() as client:
            planned = (await filter_one(client, pods[0], NAMES))["NodeNames"][0]
            waiting = asyncio.create_task(client.post("/bind", json=bind_body(pods[0], planned)))
            await h.clock.until_sleeping(1)
            h.store.apply("PodGang", "DELETED", pg)  # the clock never moves: only the deletion can answer
            reply: dict[str, str] = (await waiting).json()
            return reply

    reply = run(main)
    assert "PodGang default/g was deleted" in reply["Error"]
    assert h.coordinator.debug_gangs() == [] and h.writer.bindings == []


def test_a_standby_proposes_no_preemption_and_scores_nothing() -> None:
    class Standby:
        def is_leader(self) -> bool:
            return False

    bound = pod("victim", gpus=8, node_name="a0")
    h = harness(nodes=NODES, pods=[bound], leadership=Standby())
    urgent = pod("urgent", gpus=8)

    async def main() -> tuple[object, object]:
        preempt = await h.coordinator.preempt(
            ExtenderPreemptionArgs.model_validate(
                {
                    "Pod": urgent.model_dump(mode="json"),
                    "NodeNameToMetaVictims": {"a0": {"Pods": [{"UID": bound.metadata.uid}], "NumPDBViolations": 0}},
                }
            )
        )
        scores = await h.coordinator.prioritize(ExtenderArgs(Pod=PodRef.of(urgent), NodeNames=NAMES))
        return preempt.NodeNameToMetaVictims, scores

    victims, scores = run(main)
    assert victims in ({}, None) and scores == []


def test_healthz_fails_while_the_planner_or_a_watch_is_dead() -> None:
    h = harness(nodes=NODES)
    client = SyncClient(h.app)
    assert client.get("/healthz").status_code == 200
    alive = {"planner": True, "watches": True}
    h.coordinator.add_liveness("planner", lambda: alive["planner"])
    h.coordinator.add_liveness("watches", lambda: alive["watches"])
    assert client.get("/healthz").status_code == 200
    alive["watches"] = False
    assert client.get("/healthz").status_code == 503
    alive["watches"], alive["planner"] = True, False
    assert client.get("/healthz").status_code == 503
