"""ClusterStore: exact relists, watch events, indexes and the capacity used per node."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from api.core import Node
from scheduler.extender.state import ClusterStore
from scheduler.kube.foreign import ForeignPod, OurPods
from tests.builders import make_node, make_pod
from tests.extender_support import node, pod, podgang

GPU = "nvidia.com/gpu"


def test_relist_is_exact_and_notifies_each_change() -> None:
    store = ClusterStore()
    seen: list[tuple[str, str]] = []
    store.subscribe(lambda kind, event, obj: seen.append((event, getattr(obj, "key", getattr(obj, "name", "")))))
    store.replace("Pod", [pod("a"), pod("b")])
    store.replace("Pod", [pod("b"), pod("c")])
    assert sorted(p.metadata.name for p in store.pods()) == ["b", "c"]
    assert ("DELETED", "default/a") in seen and ("ADDED", "default/c") in seen and ("MODIFIED", "default/b") in seen


def test_used_capacity_follows_binds_deletes_and_finished_pods() -> None:
    store = ClusterStore()
    store.replace("Node", [node("n0")])
    store.apply("Pod", "ADDED", pod("a", gpus=4, node_name="n0"))
    store.apply("Pod", "ADDED", pod("b", gpus=2))  # pending: holds nothing
    assert store.used_on("n0")[GPU] == 4
    store.apply("Pod", "MODIFIED", pod("b", gpus=2, node_name="n0"))
    assert store.used_on("n0")[GPU] == 6
    store.apply("Pod", "MODIFIED", pod("a", gpus=4, node_name="n0", phase="Succeeded"))
    assert store.used_on("n0")[GPU] == 2
    store.apply("Pod", "DELETED", pod("b", gpus=2, node_name="n0"))
    store.apply("Pod", "DELETED", pod("never-seen"))  # a replayed delete is harmless
    assert store.used_on("n0") == {}


def test_indexes_by_uid_and_gang_and_versions() -> None:
    store = ClusterStore()
    before = store.node_version
    store.replace("Node", [node("n0")])
    assert store.node_version > before
    nodes_at = store.node_version
    store.apply("Pod", "ADDED", pod("w0", gang="g"))
    assert store.node_version == nodes_at  # pods do not invalidate the topology
    assert store.pod_by_uid("uid-default-w0") is not None
    assert [p.metadata.name for p in store.pods_of_gang("default/g")] == ["w0"]
    store.apply("Pod", "DELETED", pod("w0", gang="g"))
    assert store.pods_of_gang("default/g") == [] and store.pod_by_uid("uid-default-w0") is None
    assert not store.synced
    store.mark_synced()
    assert store.synced


def test_a_failing_listener_does_not_stop_the_others() -> None:
    store = ClusterStore()
    heard: list[str] = []

    def broken(*_: object) -> None:
        raise RuntimeError("listener bug")

    store.subscribe(broken)
    store.subscribe(lambda kind, event, obj: heard.append(event))
    store.apply("Node", "ADDED", node("n0"))
    assert heard == ["ADDED"]


@pytest.mark.parametrize(
    ("changed", "moves"),
    [
        pytest.param(make_node("n0").gpus(8).obj(), False, id="heartbeat-same-shape"),
        pytest.param(make_node("n0").gpus(8).label("rack", "r2").obj(), True, id="label"),
        pytest.param(make_node("n0").gpus(4).obj(), True, id="allocatable"),
        pytest.param(make_node("n0").gpus(8).taint("maintenance").obj(), True, id="taint"),
        pytest.param(make_node("n0").gpus(8).unschedulable().obj(), True, id="cordoned"),
    ],
)
def test_node_version_moves_only_with_what_placement_reads(changed: Node, moves: bool) -> None:
    store = ClusterStore()
    store.replace("Node", [make_node("n0").gpus(8).obj()])
    before = store.node_version
    store.apply("Node", "MODIFIED", changed)
    assert (store.node_version != before) is moves
    assert store.node("n0") is changed  # the newest object is kept either way
    assert store.allocatable_of("n0") == changed.allocatable()


def test_node_version_moves_when_a_node_comes_or_goes() -> None:
    store = ClusterStore()
    store.replace("Node", [make_node("n0").gpus(8).obj()])
    at = store.node_version
    store.apply("Node", "ADDED", make_node("n1").gpus(8).obj())
    assert store.node_version > at
    at = store.node_version
    store.apply("Node", "DELETED", make_node("n1").gpus(8).obj())
    assert store.node_version > at
    at = store.node_version
    store.apply("Node", "ADDED", make_node("n1").gpus(8).obj())  # back with the same shape: still a change
    assert store.node_version > at


# --- pods of other schedulers: kept as capacity ------------------------------------------------------------------


def test_other_schedulers_pods_count_as_capacity_only() -> None:
    store = ClusterStore()
    store.replace("Node", [node("n0")])
    theirs = make_pod("web-0").scheduler("default-scheduler").gpus(2).on("n0").phase("Running").obj()
    store.replace("Pod", [pod("w0", gang="g", gpus=4, node_name="n0"), theirs])  # a snapshot hands in Pods
    assert store.used_on("n0")[GPU] == 6  # 4 of our gang pod + 2 of theirs
    assert [p.key for p in store.pods()] == ["default/w0"]
    assert store.pod("default/web-0") is None and store.pod_by_uid("uid-web-0") is None
    assert store.foreign_pods() == [ForeignPod("default", "web-0", "n0", "Running", theirs.requests(), uid="uid-web-0")]
    store.apply("Pod", "DELETED", theirs)
    assert store.used_on("n0")[GPU] == 4 and store.foreign_pods() == []


def test_a_pod_that_joins_a_gang_is_kept_whole_and_counted_once() -> None:
    store = ClusterStore()
    store.replace("Node", [node("n0")])
    store.apply("Pod", "ADDED", make_pod("p").scheduler("default-scheduler").gpus(2).on("n0").obj())
    store.apply("Pod", "MODIFIED", make_pod("p").scheduler("default-scheduler").gpus(2).on("n0").gang("g").obj())
    assert store.pod("default/p") is not None and store.foreign_pods() == []
    assert store.used_on("n0")[GPU] == 2
    assert [p.key for p in store.pods_of_gang("default/g")] == ["default/p"]


def test_scheduler_names_decide_what_is_ours() -> None:
    store = ClusterStore(ours=OurPods(frozenset({"grove-a", "grove-b"})))
    store.replace("Pod", [make_pod(n).scheduler(n).obj() for n in ("grove-a", "grove-b", "grove")])
    assert sorted(p.metadata.name for p in store.pods()) == ["grove-a", "grove-b"]
    assert [p.name for p in store.foreign_pods()] == ["grove"]


def test_listeners_hear_another_schedulers_pod_as_what_the_store_keeps() -> None:
    store = ClusterStore()
    heard: list[tuple[str, object]] = []
    store.subscribe(lambda kind, event, obj: heard.append((event, obj)))
    theirs = make_pod("a").ns("web").scheduler("default-scheduler").cpu("1").on("n0").phase("Running").obj()
    store.apply("Pod", "ADDED", theirs)  # handed in whole (a snapshot), kept and announced as capacity
    store.apply("Pod", "DELETED", theirs)
    kept = ForeignPod("web", "a", "n0", "Running", {"cpu": 1000, "pods": 1}, uid="uid-a")
    assert heard == [("ADDED", kept), ("DELETED", kept)]


def test_watch_events_are_counted_by_kind_and_a_relist_is_not() -> None:
    store = ClusterStore()
    store.replace("Node", [node("n0")])
    store.replace("Pod", [pod("a")])
    store.apply("Pod", "MODIFIED", pod("a", node_name="n0"))
    store.apply("Pod", "DELETED", pod("a", node_name="n0"))
    store.apply("Node", "MODIFIED", node("n0"))
    assert store.events_applied() == {"Node": 1, "Pod": 2, "PodGang": 0, "PriorityClass": 0, "PodDisruptionBudget": 0}


def test_the_lowest_priority_of_other_schedulers_pods_holding_capacity_is_kept_as_they_come_and_go() -> None:
    store = ClusterStore()
    store.replace("Node", [node("n0")])
    assert store.lowest_foreign_priority() is None
    low = make_pod("low").scheduler("default-scheduler").priority(-5).on("n0").obj()
    mid = make_pod("mid").scheduler("default-scheduler").priority(7).on("n0").obj()
    pending = make_pod("pending").scheduler("default-scheduler").priority(-100).obj()  # holds nothing
    store.replace("Pod", [low, mid, pending])
    assert store.lowest_foreign_priority() == -5
    store.apply("Pod", "DELETED", low)
    assert store.lowest_foreign_priority() == 7
    store.apply("Pod", "MODIFIED", mid.model_copy(update={"status": mid.status.model_copy(update={"phase": "Failed"})}))
    assert store.lowest_foreign_priority() is None


def test_the_podgang_version_moves_as_podgangs_come_and_go() -> None:
    store = ClusterStore()
    versions = [store.podgang_version]
    store.replace("PodGang", [podgang("g", {"worker": (["w0"], 1)})])
    versions.append(store.podgang_version)
    store.apply("Pod", "ADDED", pod("w0", gang="g"))
    store.apply("Node", "ADDED", node("n0"))
    versions.append(store.podgang_version)  # pods and Nodes leave it as it was
    store.apply("PodGang", "MODIFIED", podgang("g", {"worker": (["w0"], 1)}))
    versions.append(store.podgang_version)  # a change (its status, say) leaves it too
    store.apply("PodGang", "ADDED", podgang("h", {"worker": (["w1"], 1)}))
    versions.append(store.podgang_version)
    store.apply("PodGang", "DELETED", podgang("g", {"worker": (["w0"], 1)}))
    versions.append(store.podgang_version)
    again = podgang("h", {"worker": (["w1"], 1)})
    store.replace("PodGang", [again.model_copy(update={"metadata": again.metadata.model_copy(
        update={"creationTimestamp": datetime(2026, 1, 1, tzinfo=UTC)})})])  # fmt: skip
    versions.append(store.podgang_version)  # deleted and made again while the watch was down: a relist's MODIFIED
    store.replace("PodGang", [])
    versions.append(store.podgang_version)
    assert versions[0] < versions[1] == versions[2] == versions[3] < versions[4] < versions[5] < versions[6]
    assert versions[6] < versions[7]
