"""The extender's mirror (its informers) against the fake API server: the store ends where the API is, through
events, 410s and faults."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from kubernetes.client import ApiClient

from benchmarks.sim.fakeapi import NODES, PODGANGS, PODS, FakeApiServer, running
from scheduler.extender.state.store import ClusterStore
from scheduler.kube.backoff import Backoff
from scheduler.kube.mirror import start_mirror
from tests.kube import objects as k
from tests.kube.waiting import wait_for


class CountingStore(ClusterStore):
    """The real store, counting the initial-sync announcements the mirror makes."""

    def __init__(self) -> None:
        super().__init__()
        self.synced_calls = 0

    def mark_synced(self) -> None:
        self.synced_calls += 1
        super().mark_synced()

    def node_of(self, pod_key: str) -> str:
        pod = self.pod(pod_key)
        return pod.spec.nodeName if pod else ""

    def names(self, kind: str) -> set[str]:
        if kind == "Node":
            return {n.name for n in self.nodes()}
        return {o.key for o in (self.pods() if kind == "Pod" else self.podgangs())}


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    with running(seed=k.gang_cluster(nodes=2, pods=2)) as server:
        yield server


@pytest.fixture
def watching(api_client: ApiClient) -> Iterator[tuple[CountingStore, threading.Event]]:
    store, stop = CountingStore(), threading.Event()
    threads = start_mirror(
        client=api_client, store=store, stop=stop, watch_timeout=2, backoff=lambda: Backoff(initial=0.01, cap=0.05)
    ).threads
    yield store, stop
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive(), f"{thread.name} did not stop"


def test_lists_every_kind_then_marks_synced_once(
    fake: FakeApiServer, watching: tuple[CountingStore, threading.Event]
) -> None:
    store, _ = watching
    wait_for(lambda: store.synced_calls == 1)
    assert store.names("Node") == {"gpu-0", "gpu-1"}
    assert store.names("Pod") == {"default/w-0", "default/w-1"}
    assert store.names("PodGang") == {"default/g"}
    gang = store.podgang("default/g")
    assert gang is not None and gang.spec.podgroups[0].minReplicas == 2
    assert store.synced


def test_watch_events_reach_the_store(fake: FakeApiServer, watching: tuple[CountingStore, threading.Event]) -> None:
    store, _ = watching
    wait_for(lambda: store.synced_calls == 1)
    fake.put(PODS, k.pod("w-2", gang="g"))
    fake.put(PODS, k.pod("w-0", gang="g", node_name="gpu-0", phase="Running"))
    fake.delete(NODES, "gpu-1")
    wait_for(lambda: "default/w-2" in store.names("Pod") and store.names("Node") == {"gpu-0"})
    wait_for(lambda: store.node_of("default/w-0") == "gpu-0")
    assert store.used_on("gpu-0").get("nvidia.com/gpu") == 4, "the bound pod's GPUs count as used"


def test_other_schedulers_pods_are_watched_as_capacity(
    fake: FakeApiServer, watching: tuple[CountingStore, threading.Event]
) -> None:
    store, _ = watching
    wait_for(lambda: store.synced_calls == 1)
    theirs = k.pod("web-0", node_name="gpu-0", phase="Running", gpus=2)
    theirs["spec"]["schedulerName"] = "default-scheduler"
    fake.put(PODS, theirs)
    wait_for(lambda: store.used_on("gpu-0").get("nvidia.com/gpu") == 2)
    assert store.pod("default/web-0") is None and [p.key for p in store.foreign_pods()] == ["default/web-0"]
    fake.delete(PODS, "web-0", "default")
    wait_for(lambda: store.used_on("gpu-0") == {} and store.foreign_pods() == [])


def test_a_finished_pod_leaves_the_store(fake: FakeApiServer, watching: tuple[CountingStore, threading.Event]) -> None:
    store, _ = watching
    wait_for(lambda: store.synced_calls == 1)
    fake.put(PODS, k.pod("w-1", gang="g", node_name="gpu-1", phase="Succeeded"))
    wait_for(lambda: store.names("Pod") == {"default/w-0"})
    selectors = {r.query.get("fieldSelector") for r in fake.requests_to("GET", r"^/api/v1/pods$")}
    assert selectors == {"status.phase!=Succeeded,status.phase!=Failed"}


def test_410_gone_relists_and_loses_no_change(
    fake: FakeApiServer, watching: tuple[CountingStore, threading.Event]
) -> None:
    store, _ = watching
    wait_for(lambda: store.synced_calls == 1)
    # Changes whose events the watcher never sees (compacted away), then the watch is told its version is gone.
    fake.put(PODS, k.pod("late", gang="g"), silent=True)
    fake.delete(PODS, "w-1", "default", silent=True)
    fake.expire_watches(PODS)
    wait_for(lambda: store.names("Pod") == {"default/w-0", "default/late"})
    pod_lists = [r for r in fake.requests_to("GET", r"^/api/v1/pods$") if not r.query.get("watch")]
    assert len(pod_lists) >= 2, "the 410 was answered by a relist"
    assert store.synced_calls == 1, "a relist must not re-announce the initial sync"
    # and the watch carries on from the relist's version
    fake.put(PODS, k.pod("after", gang="g"))
    wait_for(lambda: "default/after" in store.names("Pod"))


def test_410_when_resuming_after_a_disconnect(
    fake: FakeApiServer, watching: tuple[CountingStore, threading.Event]
) -> None:
    store, _ = watching
    wait_for(lambda: store.synced_calls == 1)
    fake.fail("GET", r"^/api/v1/nodes$", 503, reason="ServiceUnavailable", times=3)
    fake.delete(NODES, "gpu-0", silent=True)
    fake.compact()  # the open watch ends; re-watching from the old version now answers 410
    wait_for(lambda: store.names("Node") == {"gpu-1"})


def test_bookmarks_move_the_resume_point(fake: FakeApiServer, watching: tuple[CountingStore, threading.Event]) -> None:
    store, _ = watching
    wait_for(lambda: store.synced_calls == 1)
    fake.put(PODS, k.pod("unrelated"))  # bumps the global version without a node event
    fake.bookmark(NODES)
    bookmark_version = str(fake.resource_version)
    # watch_timeout=2: the next node watch starts within ~2 s, from the bookmark's version
    wait_for(
        lambda: any(r.query.get("resourceVersion") == bookmark_version for r in fake.requests_to("GET", r"/nodes$")),
        timeout=60,
    )
    node_watches = [r for r in fake.requests_to("GET", r"/nodes$") if r.query.get("watch")]
    assert all(r.query.get("allowWatchBookmarks") == "true" for r in node_watches)


def test_errors_back_off_and_sync_waits_for_every_kind(
    fake: FakeApiServer, api_client: ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    fake.fail("GET", r"/podgangs$", 404, reason="NotFound", times=2)
    fake.fail("GET", r"/podgangs$", 403, reason="Forbidden", message="podgangs is forbidden", times=3)
    store, stop = CountingStore(), threading.Event()
    backoff = lambda: Backoff(initial=0.05, cap=0.1)  # noqa: E731
    threads = start_mirror(client=api_client, store=store, stop=stop, backoff=backoff).threads
    try:
        wait_for(lambda: store.names("Node") != set() and store.names("Pod") != set())
        assert store.synced_calls == 0, "synced while PodGangs were never listed"
        wait_for(lambda: store.synced_calls == 1)
        assert len(fake.requests_to("GET", r"/podgangs$")) >= 6
        logged = caplog.text
        assert "no PodGang CRD: install Grove's, or ours (kubectl apply -k deploy/overlays/standalone)" in logged
        assert "grant list/watch on podgangs (deploy/base/extender-rbac.yaml)" in logged
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)


def test_on_synced_runs_once_after_the_store_is_synced(fake: FakeApiServer, api_client: ApiClient) -> None:
    store, stop = CountingStore(), threading.Event()
    heard: list[int] = []  # the store's synced-call count when the callback ran
    threads = start_mirror(
        client=api_client, store=store, stop=stop, watch_timeout=2, on_synced=lambda: heard.append(store.synced_calls)
    ).threads
    try:
        wait_for(lambda: heard != [])
        fake.expire_watches(PODS)  # a relist later must not announce the first sync again
        fake.put(PODS, k.pod("late"))
        wait_for(lambda: "default/late" in store.names("Pod"))
        assert heard == [1]
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)


def test_an_invalid_object_is_skipped_not_fatal(
    fake: FakeApiServer, watching: tuple[CountingStore, threading.Event]
) -> None:
    store, _ = watching
    wait_for(lambda: store.synced_calls == 1)
    broken = k.podgang("broken", pods=["x"])
    broken["spec"]["podgroups"][0]["minReplicas"] = -1
    fake.put(PODGANGS, broken)
    fake.put(PODGANGS, k.podgang("fine", pods=["y"]))
    wait_for(lambda: "default/fine" in store.names("PodGang"))
    assert "default/broken" not in store.names("PodGang")


def test_a_node_reporting_an_absurd_gpu_count_is_kept_unusable(
    fake: FakeApiServer, watching: tuple[CountingStore, threading.Event], caplog: pytest.LogCaptureFixture
) -> None:
    """A kubelet or device plugin sets a node's capacity: one absurd value must neither crash the mirror nor leave
    an older, usable version of that node in the store."""
    store, _ = watching
    wait_for(lambda: store.synced_calls == 1)
    broken = k.node("gpu-1")
    broken["status"]["allocatable"]["nvidia.com/gpu"] = "1e40"
    fake.put(NODES, broken)
    wait_for(lambda: (node := store.node("gpu-1")) is not None and node.spec.unschedulable)
    node = store.node("gpu-1")
    assert node is not None and node.allocatable() == {}
    assert "field=status.allocatable" in caplog.text and "nvidia.com/gpu" in caplog.text
    fake.put(NODES, k.node("gpu-1"))  # the device plugin is fixed: the node is usable again
    wait_for(lambda: (node := store.node("gpu-1")) is not None and not node.spec.unschedulable)
    fake.put(NODES, broken, silent=True)
    fake.expire_watches(NODES)  # and a relist meets the bad value as well
    wait_for(lambda: (node := store.node("gpu-1")) is not None and node.spec.unschedulable)
    assert store.names("Node") == {"gpu-0", "gpu-1"}


def test_large_lists_are_paged(fake: FakeApiServer, api_client: ApiClient) -> None:
    from scheduler.kube.listing import NODES as NODE_RESOURCE
    from scheduler.kube.listing import list_all

    for i in range(2, 12):
        fake.put(NODES, k.node(f"gpu-{i}"))
    items, version = list_all(api_client, NODE_RESOURCE, page_size=4)
    assert sorted(i["metadata"]["name"] for i in items) == sorted(f"gpu-{i}" for i in range(12))
    assert all(i["kind"] == "Node" and i["apiVersion"] == "v1" for i in items)
    assert version == str(fake.resource_version)
    assert len([r for r in fake.requests_to("GET", r"/nodes$")]) == 3  # 12 items / 4 per page


def test_stop_ends_every_thread_promptly(api_client: ApiClient) -> None:
    store, stop = CountingStore(), threading.Event()
    threads = start_mirror(client=api_client, store=store, stop=stop, watch_timeout=300).threads
    wait_for(lambda: store.synced_calls == 1)
    started = time.monotonic()
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    # Far below the 300 s watch time-out, far above any stall of a loaded machine.
    assert time.monotonic() - started < 30, "a parked watch was not interrupted"


def test_a_heartbeat_moves_the_resume_point_but_not_the_store(
    fake: FakeApiServer, watching: tuple[CountingStore, threading.Event]
) -> None:
    store, _ = watching
    wait_for(lambda: store.synced_calls == 1)
    heard: list[tuple[str, str]] = []
    store.subscribe(lambda kind, event_type, obj: heard.append((kind, event_type)) if kind == "Node" else None)
    node = fake.get(NODES, "gpu-0")
    assert node is not None
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-26T08:00:00Z"}]
    node["metadata"]["labels"]["rack"] = "r7"
    fake.put(NODES, node)  # the label: decoded
    wait_for(lambda: (n := store.node("gpu-0")) is not None and n.metadata.labels.get("rack") == "r7")
    node["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-11-26T08:00:10Z"
    fake.put(NODES, node)  # a heartbeat: nothing the store keeps
    heartbeat_version = str(fake.resource_version)
    # watch_timeout=2: the open watch ends within ~2 s and the next resumes from the last version it read.
    wait_for(
        lambda: any(r.query.get("resourceVersion") == heartbeat_version for r in fake.requests_to("GET", r"/nodes$"))
    )
    assert heard == [("Node", "MODIFIED")], "the heartbeat reached no listener"


def test_a_kind_that_keeps_failing_is_reported_stale_until_its_watch_opens_again(
    fake: FakeApiServer, api_client: ApiClient
) -> None:
    # The pods list refused (a 403: RBAC taken away) while the other kinds work: the store keeps its old pods, and
    # the mirror says which kind is behind, until a list or a watch goes through again.
    store, stop = CountingStore(), threading.Event()
    mirror = start_mirror(client=api_client, store=store, stop=stop, backoff=lambda: Backoff(initial=0.05, cap=0.1))
    try:
        wait_for(lambda: store.synced_calls == 1)
        assert mirror.stale(after=0.0) is None
        fake.fail("GET", r"^/api/v1/pods$", 403, reason="Forbidden", message="pods is forbidden", times=40)
        fake.compact()  # the open watches end; reopening the pods watch, then relisting pods, now fails
        wait_for(lambda: mirror.stale(after=0.5) is not None, timeout=60)
        stale = str(mirror.stale(after=0.0))
        assert stale.startswith("watches failing: Pod for ") and stale.count(" for ") == 1, stale
        wait_for(lambda: mirror.stale(after=0.0) is None, timeout=60)  # the 40 refusals are spent: listed again
    finally:
        stop.set()
        for thread in mirror.threads:
            thread.join(timeout=60)
