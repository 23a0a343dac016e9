"""Nominations: every planned, pending member's ``status.nominatedNodeName`` follows its gang's plan, through the
in-memory writer (which refuses a nomination for a pod that is gone or re-created, as the API server's UID test
does). kube-scheduler's reading of them is checked on the real control plane (``tests/e2e/test_nominations.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from api.core import Pod
from scheduler.extender.cluster_writer import InMemoryClusterWriter, Nominated, Nomination
from scheduler.extender.coordinator.members import gang_ref_of
from scheduler.kube.errors import WriteError
from scheduler.kube.nominations import Wanted
from tests.extender_support import CLIQUE, Harness, bind_body, filter_body, gang, harness, node, pod, run


def _cluster() -> list:
    return [node(f"n{i}", gpus=8, clique="A" if i < 2 else "B") for i in range(4)]


NAMES = [f"n{i}" for i in range(4)]


def _plan(h: Harness, gang_key: str) -> dict[str, str]:
    return dict(h.coordinator.table.nomination_basis(gang_key).plan)


def test_every_planned_member_is_nominated_to_its_planned_node() -> None:
    pods, pg = gang("train", workers=4, gpus=4, required=CLIQUE)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg])
    h.settle()
    plan = _plan(h, "default/train")
    assert len(plan) == 4
    assert h.writer.nominated_nodes() == plan
    assert h.coordinator.nominator.nominated() == plan
    assert len(h.writer.nominations) == 4, "one write per pod"
    h.settle()
    assert len(h.writer.nominations) == 4, "nothing written again while the plan holds"


def test_members_that_lose_their_plan_are_cleared_and_bound_ones_are_forgotten() -> None:
    pods, pg = gang("train", workers=4, gpus=4)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg])
    h.settle()
    plan = _plan(h, "default/train")
    bound = pods[0]
    h.store.apply("Pod", "MODIFIED", _on(bound, plan[bound.key]))
    h.store.apply("Pod", "DELETED", pods[1])  # a guaranteed member gone: the gang waits, its plan goes
    h.settle()
    assert _plan(h, "default/train") == {}
    shown = h.writer.nominated_nodes()
    assert {shown[p.key] for p in pods[2:]} == {""}, "the pending members' nominations are cleared"
    assert shown[bound.key] == plan[bound.key], "a bound pod is not written to (the API server clears it)"
    assert shown[pods[1].key] == plan[pods[1].key], "a deleted pod is not written to"
    assert h.coordinator.nominator.nominated() == {}


def test_a_replanned_member_is_nominated_again_to_its_new_node() -> None:
    solo = pod("solo", gpus=8)
    h = harness(nodes=_cluster(), pods=[solo])

    async def main() -> None:
        async with h.client() as client:
            first = (await client.post("/filter", json=filter_body(solo, NAMES))).json()["NodeNames"][0]
            h.settle()
            assert h.writer.nominated_nodes() == {solo.key: first}
            others = [n for n in NAMES if n != first]
            second = (await client.post("/filter", json=filter_body(solo, others))).json()["NodeNames"][0]
            h.settle()
            assert h.writer.nominated_nodes() == {solo.key: second}

    run(main)


def test_a_nomination_older_than_the_plan_is_answered_retry_without_replanning() -> None:
    pods, pg = gang("train", workers=2, gpus=8)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg])
    h.settle()
    plan = _plan(h, "default/train")
    member = pods[0]
    stale = next(n for n in NAMES if n not in plan.values())

    async def main() -> None:
        async with h.client() as client:
            body = filter_body(member, [stale])
            body["Pod"]["status"]["nominatedNodeName"] = stale
            reply = (await client.post("/filter", json=body)).json()
            assert reply["Error"] and plan[member.key] in reply["Error"], reply
            assert h.coordinator.metrics.replans.labels("node_refused")._value.get() == 0
            assert _plan(h, "default/train") == plan, "the plan stands"
            body = filter_body(member, NAMES)  # kube-scheduler goes on to every node in the same cycle
            body["Pod"]["status"]["nominatedNodeName"] = stale
            assert (await client.post("/filter", json=body)).json()["NodeNames"] == [plan[member.key]]

    run(main)


def test_the_planned_node_refused_with_the_nomination_pointing_at_it_is_still_replanned() -> None:
    solo = pod("solo", gpus=8)
    h = harness(nodes=_cluster(), pods=[solo])

    async def main() -> None:
        async with h.client() as client:
            first = (await client.post("/filter", json=filter_body(solo, NAMES))).json()["NodeNames"][0]
            others = [n for n in NAMES if n != first]
            body = filter_body(solo, others)
            body["Pod"]["status"]["nominatedNodeName"] = first
            second = (await client.post("/filter", json=body)).json()["NodeNames"]
            assert second and second[0] in others
            assert h.coordinator.metrics.replans.labels("node_refused")._value.get() == 1

    run(main)


class _Held(InMemoryClusterWriter):
    """Answers nominations only when told to: writes in flight, as over the network."""

    def __init__(self, inner: InMemoryClusterWriter) -> None:
        super().__init__(None)
        self.inner = inner
        self.held: list[tuple[Nomination, Nominated]] = []
        self.sent: list[Nomination] = []

    def nominate(self, nominations: Sequence[Nomination], done: Nominated, *, wanted: Wanted = lambda _: True) -> None:
        for nomination in nominations:
            self.sent.append(nomination)
            self.held.append((nomination, done))

    def answer(self, *, error: WriteError | None = None) -> None:
        held, self.held = self.held, []
        for nomination, done in held:
            done(nomination, error)


def test_one_write_per_pod_in_flight_and_the_newest_wish_goes_last() -> None:
    solo = pod("solo", gpus=8)
    h = harness(nodes=_cluster(), pods=[solo])
    held = _Held(h.writer)
    h.coordinator.nominator._writer = held
    ref = h.coordinator.table

    async def main() -> None:
        async with h.client() as client:
            first = (await client.post("/filter", json=filter_body(solo, NAMES))).json()["NodeNames"][0]
            h.settle()
            assert [n.node for n in held.sent] == [first]
            others = [n for n in NAMES if n != first]
            second = (await client.post("/filter", json=filter_body(solo, others))).json()["NodeNames"][0]
            h.settle()
            assert [n.node for n in held.sent] == [first], "waits for the write in flight"
            held.answer()
            assert [n.node for n in held.sent] == [first, second], "then the newest goes"
            held.answer()
            assert h.coordinator.nominator.nominated() == {solo.key: second}
            assert ref.nomination_basis(gang_ref_of(solo).key).plan == {solo.key: second}

    run(main)


def test_a_wish_queued_behind_a_write_is_not_sent_once_the_replica_is_deposed() -> None:
    class Flipping:
        leading = True

        def is_leader(self) -> bool:
            return self.leading

    leadership = Flipping()
    solo = pod("solo", gpus=8)
    h = harness(nodes=_cluster(), pods=[solo], leadership=leadership)
    held = _Held(h.writer)
    h.coordinator.nominator._writer = held

    async def main() -> None:
        async with h.client() as client:
            first = (await client.post("/filter", json=filter_body(solo, NAMES))).json()["NodeNames"][0]
            h.settle()
            others = [n for n in NAMES if n != first]
            await client.post("/filter", json=filter_body(solo, others))  # a new wish, queued behind the first
            h.settle()
            leadership.leading = False
            held.answer()
            assert [n.node for n in held.sent] == [first], "a deposed replica sent its queued wish"

    run(main)


def test_a_failed_write_is_forgotten_and_written_again_on_the_next_plan() -> None:
    pods, pg = gang("train", workers=2, gpus=8)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg])
    held = _Held(h.writer)
    h.coordinator.nominator._writer = held
    h.settle()
    held.answer(error=WriteError("API server unavailable (simulated)", status=503))
    assert h.coordinator.nominator.nominated() == {}
    assert h.coordinator.metrics.nominations.labels("failed")._value.get() == 2


def test_a_standby_writes_no_nomination() -> None:
    class Standby:
        def is_leader(self) -> bool:
            return False

    pods, pg = gang("train", workers=2, gpus=8)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], leadership=Standby())
    h.settle()
    h.coordinator.nominator.sync(gang_ref_of(pods[0]))
    assert h.writer.nominations == []


def test_nominate_off_plans_all_the_same_and_writes_nothing() -> None:
    pods, pg = gang("train", workers=2, gpus=8)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], nominate=False)
    h.settle()
    assert _plan(h, "default/train")
    assert h.writer.nominations == []


class _Queued(InMemoryClusterWriter):
    """Sends nominations only when told to, each asking ``wanted`` as its turn comes: a long queue of writes."""

    def __init__(self, inner: InMemoryClusterWriter) -> None:
        super().__init__(None)
        self.inner = inner
        self.queue: list[tuple[Nomination, Nominated, Wanted]] = []

    def nominate(self, nominations: Sequence[Nomination], done: Nominated, *, wanted: Wanted = lambda _: True) -> None:
        self.queue.extend((nomination, done, wanted) for nomination in nominations)

    def send_all(self) -> None:
        queue, self.queue = self.queue, []
        for nomination, done, wanted in queue:
            self.inner.nominate([nomination], done, wanted=wanted)


def test_a_queued_nomination_whose_pods_bind_arrived_meanwhile_is_not_sent() -> None:
    """kube-scheduler popped the pod before its nomination's turn came: the write would change nothing it does."""
    pods, pg = gang("train", workers=3, gpus=8)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], nominate=True, fake_time=True)
    queued = _Queued(h.writer)
    h.coordinator.nominator._writer = queued
    h.settle()
    plan = _plan(h, "default/train")
    assert [n.key for n, _, _ in queued.queue] == [p.key for p in pods]
    first = pods[0]

    async def main() -> None:
        async with h.client() as client:
            waiting = asyncio.create_task(client.post("/bind", json=bind_body(first, plan[first.key])))
            await h.clock.until_sleeping(1)
            queued.send_all()
            h.clock.advance(60)
            await waiting

    run(main)
    assert h.writer.nominated_nodes() == {p.key: plan[p.key] for p in pods[1:]}
    counted = h.coordinator.metrics.nominations
    assert counted.labels("not_sent")._value.get() == 1 and counted.labels("written")._value.get() == 2
    assert first.key not in h.coordinator.nominator.nominated()


def _on(p: Pod, node_name: str) -> Pod:
    return p.model_copy(update={"spec": p.spec.model_copy(update={"nodeName": node_name})})


def test_a_member_whose_bind_arrived_is_not_nominated() -> None:
    pods, pg = gang("train", workers=2, gpus=8)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], nominate=True, fake_time=True)
    first, second = pods

    async def main() -> None:
        async with h.client() as client:
            node = (await client.post("/filter", json=filter_body(first, NAMES))).json()["NodeNames"][0]
            waiting = asyncio.create_task(client.post("/bind", json=bind_body(first, node)))
            await h.clock.until_sleeping(1)
            h.settle()
            assert set(h.writer.nominated_nodes()) == {second.key}, "kube-scheduler is done with the first"
            h.clock.advance(60)
            await waiting

    run(main)


def test_members_bound_by_the_release_before_the_watch_shows_it_are_not_cleared() -> None:
    pods, pg = gang("train", workers=2, gpus=8)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg])
    h.coordinator.releaser._writer = InMemoryClusterWriter(None)  # binds the API accepts, the watch not yet shown
    h.settle()
    plan = _plan(h, "default/train")
    assert h.writer.nominated_nodes() == plan

    async def main() -> None:
        async with h.client() as client:
            binds = [client.post("/bind", json=bind_body(p, plan[p.key])) for p in pods]
            replies = await asyncio.gather(*binds)
            assert all(r.json().get("Error", "") == "" for r in replies), [r.text for r in replies]

    run(main)
    assert h.store.pod(pods[0].key) is not None and not h.store.pod(pods[0].key).spec.nodeName, "watch lags"
    h.settle()
    assert h.writer.nominated_nodes() == plan, "no nomination cleared on a pod our release bound"
    assert h.coordinator.nominator.nominated() == {}


def test_filters_are_counted_by_what_the_nomination_spared_kube_scheduler() -> None:
    pods, pg = gang("train", workers=3, gpus=8)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg])
    h.settle()
    plan = _plan(h, "default/train")

    def counted() -> dict[str, float]:
        counter = h.coordinator.metrics.filter_nominations
        return {seen: counter.labels(seen)._value.get() for seen in ("alone", "scanned", "none")}

    async def main() -> None:
        async with h.client() as client:
            alone, scanned, none = pods
            for member, names, nominated in ((alone, [plan[alone.key]], True), (scanned, NAMES, True),
                                             (none, NAMES, False)):  # fmt: skip
                body = filter_body(member, names)
                body["Pod"]["status"]["nominatedNodeName"] = plan[member.key] if nominated else ""
                assert (await client.post("/filter", json=body)).json()["NodeNames"] == [plan[member.key]]

    run(main)
    assert counted() == {"alone": 1.0, "scanned": 1.0, "none": 1.0}


def test_a_nomination_another_component_wrote_is_never_overwritten() -> None:
    # KEP-5278: whoever sets nominatedNodeName owns it. w0 arrives nominated by someone else (kube-scheduler after a
    # preemption of its own) to a node no plan of ours gives it: we leave its nomination alone; its gang-mates are
    # nominated as usual.
    pods, pg = gang("train", workers=4, gpus=4, required=CLIQUE)
    theirs = pods[0].model_copy(update={"status": pods[0].status.model_copy(update={"nominatedNodeName": "n9"})})
    h = harness(nodes=_cluster(), pods=[theirs, *pods[1:]], podgangs=[pg])
    h.settle()
    plan = _plan(h, "default/train")
    assert len(plan) == 4
    written = h.writer.nominated_nodes()
    assert theirs.key not in written
    assert all(written[p.key] == plan[p.key] for p in pods[1:])


def test_a_member_another_scheduler_places_is_never_nominated() -> None:
    # A PodGang may list a pod whose schedulerName is not ours (a sidecar job, a hand-made pod): kube-scheduler's
    # other profile places it, and a nomination written by us would be a claim on a pod we do not schedule.
    pods, pg = gang("train", workers=4, gpus=4)
    theirs = pods[3].model_copy(update={"spec": pods[3].spec.model_copy(update={"schedulerName": "default-scheduler"})})
    h = harness(nodes=_cluster(), pods=[*pods[:3], theirs], podgangs=[pg])
    h.settle()
    assert theirs.key not in h.writer.nominated_nodes()
    assert {p.key for p in pods[:3]} <= h.writer.nominated_nodes().keys()


def test_a_member_still_held_by_groves_gate_is_planned_but_not_nominated() -> None:
    # Grove's flow: planned as soon as the PodGang exists, while Grove's gate is lifted pod by pod; kube-scheduler
    # pops each pod the moment its gate goes, so a nomination would only cost the API server a write.
    pods, pg = gang("train", workers=4, gpus=4)
    gated = [pod(p.metadata.name, gang="train", gpus=4, gated=True) for p in pods]
    h = harness(nodes=_cluster(), pods=gated, podgangs=[pg])
    h.settle()
    assert len(_plan(h, "default/train")) == 4
    assert h.writer.nominations == []


def test_a_nomination_written_elsewhere_between_our_read_and_our_write_is_never_overwritten() -> None:
    # kube-scheduler nominates a pod itself (a preemption of its own) after the nominator read the pod and before
    # its write lands: the write is conditional on the field still reading what we saw, so it fails and theirs stays.
    class Racing(InMemoryClusterWriter):
        def nominate(
            self, nominations: Sequence[Nomination], done: Nominated, *, wanted: Wanted = lambda _: True
        ) -> None:
            for nomination in nominations:
                if nomination.name == "train-w0":
                    self.nominated_elsewhere(nomination.key, "n9")
            super().nominate(nominations, done, wanted=wanted)

    pods, pg = gang("train", workers=4, gpus=4)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], writer_type=Racing)
    h.settle()
    h.settle()
    written = h.writer.nominated_nodes()
    assert pods[0].key not in written, "ours never replaced theirs"
    assert {p.key for p in pods[1:]} <= written.keys()
    assert h.coordinator.metrics.nominations.labels("failed")._value.get() >= 1
    assert h.coordinator.nominator.nominated().get(pods[0].key) is None


def test_a_pod_we_nominated_is_moved_on_the_condition_that_it_still_reads_our_node() -> None:
    pods, pg = gang("train", workers=4, gpus=4)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg])
    h.settle()
    first = {n.key: n for n in h.writer.nominations}
    assert {n.previous for n in first.values()} == {""}, "never nominated: the field must still be unset"
    plan = _plan(h, "default/train")
    h.store.apply("Pod", "MODIFIED", _on(pods[0], plan[pods[0].key]))
    h.store.apply("Pod", "DELETED", pods[1])  # a guaranteed member gone: the gang waits, its plan goes
    h.settle()
    clears = [n for n in h.writer.nominations if n.node == ""]
    assert {n.key for n in clears} == {p.key for p in pods[2:]}
    assert all(n.previous == plan[n.key] for n in clears), "cleared only if it still reads our node"


class _LosingClears(InMemoryClusterWriter):
    """Fails the first clear of ``train-w2`` with a 503; ``applied``: the API server had written it all the same
    (the answer was lost)."""

    applied = False

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.clears: list[Nomination] = []

    def nominate(self, nominations: Sequence[Nomination], done: Nominated, *, wanted: Wanted = lambda _: True) -> None:
        for nomination in nominations:
            if nomination.name == "train-w2" and not nomination.node:
                self.clears.append(nomination)
                if len(self.clears) == 1:
                    if self.applied:
                        super().nominate([nomination], lambda n, e: None)
                    done(nomination, WriteError("nominating: 503 Service Unavailable", status=503))
                    continue
            super().nominate([nomination], done)


def _lose_a_plan(h: Harness, pods: list[Pod]) -> dict[str, str]:
    h.settle()
    plan = _plan(h, "default/train")
    h.store.apply("Pod", "MODIFIED", _on(pods[0], plan[pods[0].key]))
    h.store.apply("Pod", "DELETED", pods[1])  # the gang waits: its pending members' nominations are cleared
    h.settle()
    return plan


def test_a_clear_that_failed_unanswered_is_sent_again_until_the_api_shows_it() -> None:
    # A nomination left behind makes kube-scheduler hold the pod's room on that node for every other pod.
    pods, pg = gang("train", workers=4, gpus=4)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], writer_type=_LosingClears)
    plan = _lose_a_plan(h, pods)
    writer = h.writer
    assert isinstance(writer, _LosingClears)
    assert [n.previous for n in writer.clears] == [plan[pods[2].key]] * 2, "sent again, on the same condition"
    assert writer.nominated_nodes()[pods[2].key] == ""
    h.settle()
    assert len(writer.clears) == 2, "settled: not sent a third time"


def test_a_clear_that_landed_though_its_answer_was_lost_is_settled_by_the_retrys_refusal() -> None:
    class Applied(_LosingClears):
        applied = True

    pods, pg = gang("train", workers=4, gpus=4)
    h = harness(nodes=_cluster(), pods=pods, podgangs=[pg], writer_type=Applied)
    _lose_a_plan(h, pods)
    writer = h.writer
    assert isinstance(writer, Applied)
    assert len(writer.clears) == 2 and writer.nominated_nodes()[pods[2].key] == ""
    h.settle()
    assert len(writer.clears) == 2, "the retry's 422 said it was cleared: nothing left to send"


def _nominated_by(p: Pod, node: str, manager: str) -> Pod:
    """``p`` as the watch decoder reads it once ``manager`` wrote its nominatedNodeName (kube-apiserver v1.36 records
    the writer of a status field in a ``managedFields`` entry for the ``status`` subresource; the decoding of those
    is ``tests/kube/test_decoding.py``'s)."""
    data = p.model_dump(mode="json")
    data["status"]["nominatedNodeName"] = node
    pod = Pod.model_validate(data)
    pod.metadata.status_managers = (manager,)
    return pod


def test_a_new_leader_clears_the_nominations_of_ours_no_plan_backs_and_keeps_the_rest() -> None:
    """After a restart or a failover, what the previous leader nominated is still on the pods. The nominations ours
    (our field manager owns the field) whose gang's plan does not back them are cleared; the ones the new plan
    backs stay as they are (no write); one kube-scheduler wrote is left alone."""
    kept, kept_pg = gang("kept", workers=2, gpus=8)
    orphaned = gang("orphaned", workers=2, gpus=8)[0]  # its PodGang is gone: no plan backs its nominations
    theirs = pod("theirs", gpus=8)
    probe = harness(nodes=_cluster(), pods=kept, podgangs=[kept_pg], nominate=False)
    probe.settle()
    plan = _plan(probe, "default/kept")  # where a leader plans this gang on this cluster
    before = [
        *(_nominated_by(p, plan[p.key], "grove-extender") for p in kept),
        *(_nominated_by(p, "n3", "grove-extender") for p in orphaned),
        _nominated_by(theirs, "n2", "kube-scheduler"),
    ]
    h = harness(nodes=_cluster(), pods=before, podgangs=[kept_pg])
    h.settle()
    shown = h.writer.nominated_nodes()
    assert {shown.get(p.key) for p in orphaned} == {""}, "no plan backs them: cleared"
    assert not any(p.key in shown for p in kept), "the plan backs them: not written again"
    assert theirs.key not in shown, "kube-scheduler's nomination is its own"
    assert _plan(h, "default/kept") == plan


def test_nominations_of_ours_are_what_our_field_manager_owns() -> None:
    from scheduler.kube.nominations import nominated_by_us

    member = pod("m", gpus=8)
    assert nominated_by_us(_nominated_by(member, "n1", "grove-extender"))
    assert not nominated_by_us(_nominated_by(member, "n1", "kube-scheduler"))
    assert not nominated_by_us(_nominated_by(member, "", "grove-extender")), "nothing left to answer for"
    assert not nominated_by_us(member)


def test_a_gangs_nominations_are_written_in_the_order_its_pods_arrived() -> None:
    """kube-scheduler pops the pods it has not tried in the order its informer added them: a large gang's
    nominations go out in that order, so the pods it pops first find theirs written."""
    pods, pg = gang("train", workers=12, gpus=2)
    arrived = [pods[i] for i in (7, 0, 11, 3, 9, 1, 5, 10, 2, 8, 4, 6)]
    assert [p.key for p in arrived] != sorted(p.key for p in arrived)
    h = harness(nodes=_cluster(), pods=arrived, podgangs=[pg])
    h.settle()
    assert [n.key for n in h.writer.nominations] == [p.key for p in arrived]


def test_pods_offered_before_their_podgang_existed_are_nominated_after_the_untried() -> None:
    """A failed attempt queues the pod again behind every pod queued before it: those kube-scheduler offered
    while their PodGang was missing come after the rest, in the order they were offered."""
    pods, pg = gang("train", workers=6, gpus=2)
    h = harness(nodes=_cluster(), pods=pods)
    tried = [pods[4], pods[1]]

    async def main() -> None:
        async with h.client() as client:
            for member in tried:
                reply = (await client.post("/filter", json=filter_body(member, NAMES))).json()
                assert "does not exist yet" in reply["Error"], reply

    run(main)
    h.store.apply("PodGang", "ADDED", pg)
    h.settle()
    untried = [p for p in pods if p not in tried]
    assert [n.key for n in h.writer.nominations] == [p.key for p in untried + tried]


def test_a_pod_made_again_under_its_name_is_queued_anew() -> None:
    pods, _ = gang("train", workers=3, gpus=2)
    h = harness(nodes=_cluster(), pods=pods)
    first = pods[0]
    again = first.model_copy(update={"metadata": first.metadata.model_copy(update={"uid": "another"})})
    h.store.apply("Pod", "MODIFIED", pods[1])  # an update keeps its place
    h.store.apply("Pod", "MODIFIED", again)
    assert h.store.in_queue_order(p.key for p in reversed(pods)) == [pods[1].key, pods[2].key, first.key]
    h.store.apply("Pod", "DELETED", pods[2])
    assert h.store.in_queue_order([pods[2].key, first.key]) == [first.key, pods[2].key], "pods not held go last"
