"""The background worker's two threads: planning and nominating never wait behind PodGang status writes, which
block on the API server; and the work queue they share hands each its own kinds, in arrival order."""

from __future__ import annotations

import threading
import time
from typing import Any

from scheduler.extender.cluster_writer import InMemoryClusterWriter
from scheduler.extender.coordinator import BackgroundWorker
from scheduler.extender.coordinator.members import GangRef
from scheduler.extender.coordinator.work import WorkQueue
from scheduler.extender.state import ClusterStore
from tests.extender_support import PATIENCE_SECONDS, gang, harness, node, pod


def test_a_taker_gets_its_own_kinds_in_arrival_order_and_leaves_the_rest() -> None:
    queue = WorkQueue()
    a, b = GangRef("ns", "a"), GangRef("ns", "b")
    for work in [("plan", a), ("report", a), ("nominate", a), ("plan", b), ("report", a), ("running", b)]:
        queue.put(work)  # type: ignore[arg-type]
    assert queue.take(0, ("plan", "nominate")) == [("plan", a), ("nominate", a), ("plan", b)]
    assert queue.take(0, ("plan", "nominate")) == []
    assert queue.take(0) == [("report", a), ("running", b)], "the same work queued twice is taken once"


def test_a_taker_waits_for_its_own_kinds_only() -> None:
    queue = WorkQueue()
    ref = GangRef("ns", "a")
    taken: list[object] = []
    reporter = threading.Thread(target=lambda: taken.extend(queue.take(PATIENCE_SECONDS, ("report",))))
    reporter.start()
    queue.put(("plan", ref))  # wakes the taker, which goes back to waiting
    time.sleep(0.05)
    assert reporter.is_alive() and taken == []
    queue.put(("report", ref))
    reporter.join(PATIENCE_SECONDS)
    assert taken == [("report", ref)]
    assert queue.take(0) == [("plan", ref)]


class SlowStatusWriter(InMemoryClusterWriter):
    """An API server that answers PodGang status writes only once the test says so."""

    def __init__(self, store: ClusterStore) -> None:
        super().__init__(store)
        self.blocked = threading.Event()
        self.answer = threading.Event()

    def patch_podgang_status(self, *, namespace: str, name: str, status: dict[str, Any]) -> None:
        self.blocked.set()
        assert self.answer.wait(PATIENCE_SECONDS)
        super().patch_podgang_status(namespace=namespace, name=name, status=status)


def test_a_podgang_status_write_that_hangs_does_not_hold_up_planning_or_nominations() -> None:
    # Gang "done" is bound: the reporter writes its Scheduled status, and the API server does not answer. Gang "next"
    # arrives meanwhile: it must be planned and its pods nominated all the same.
    done, done_gang = gang("done", workers=2, gpus=8)
    bound = [pod(p.metadata.name, gang="done", gpus=8, node_name=n) for p, n in zip(done, ["a0", "a1"], strict=True)]
    h = harness(nodes=[node("a0"), node("a1"), node("b0"), node("b1")], pods=bound, podgangs=[done_gang],
                writer_type=SlowStatusWriter)  # fmt: skip
    writer = h.writer
    assert isinstance(writer, SlowStatusWriter)
    worker = BackgroundWorker(h.coordinator, tick_seconds=0.05)
    worker.start()
    try:
        assert writer.blocked.wait(PATIENCE_SECONDS), "the bound gang's status was never written"
        following, following_gang = gang("next", workers=2, gpus=8)
        for member in following:
            h.store.apply("Pod", "ADDED", member)
        h.store.apply("PodGang", "ADDED", following_gang)
        deadline = time.monotonic() + PATIENCE_SECONDS / 2  # well before the hung write gives up
        while len(writer.nominated_nodes()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not writer.answer.is_set()
        assert set(writer.nominated_nodes()) == {p.key for p in following}, "planned and nominated while it hung"
        assert h.store.podgang("default/done").status is None or not h.store.podgang("default/done").status.conditions
    finally:
        writer.answer.set()
        worker.stop()
    assert not worker.alive()
