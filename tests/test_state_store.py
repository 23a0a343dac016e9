"""ClusterStore: exact relists, watch events, indexes and the capacity used per node."""

from __future__ import annotations

import pytest

from api.kube import Node
from scheduler.state import ClusterStore
from tests.builders import make_node
from tests.extender_support import node, pod

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
