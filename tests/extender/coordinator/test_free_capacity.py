"""The coordinator's free capacity (the store's cached vectors, only nodes with something taken rebuilt) agrees
with the translator's reference computed from the Nodes and Pods, and never changes the store's vectors."""

from __future__ import annotations

from scheduler.extender.coordinator.solving import free_capacity
from scheduler.extender.state import ClusterStore
from scheduler.extender.translation.cluster_view import free_capacity as reference
from tests.builders import make_node, make_pod

GPU = "nvidia.com/gpu"


def test_free_capacity_agrees_with_the_reference_and_leaves_the_store_as_it_was() -> None:
    nodes = [make_node("a").gpus(8).cpu("96").obj(), make_node("b").gpus(8).obj(), make_node("c").gpus(4).obj()]
    pods = [
        make_pod("bound").gpus(4).cpu("10").on("a").obj(),
        make_pod("terminating").gpus(1).on("a").deleting().obj(),
        make_pod("done").gpus(2).on("a").phase("Succeeded").obj(),
        make_pod("over").gpus(8).on("c").obj(),  # over-committed: nothing free, not a debt
        make_pod("pending").gpus(8).obj(),
        make_pod("elsewhere").gpus(8).on("gone").obj(),
    ]
    store = ClusterStore()
    store.replace("Node", nodes)
    store.replace("Pod", pods)
    reserved = {"b": {GPU: 3}, "gone": {GPU: 1}, "a": {GPU: 1, "cpu": 2000}}
    before = {node.name: dict(store.allocatable_of(node.name)) for node in nodes}
    free = free_capacity(store=store, reserved=reserved)
    assert free == reference(nodes, pods, reservations=reserved)
    assert free["b"][GPU] == 5 and free["c"][GPU] == 0 and "gone" not in free
    assert free_capacity(store=store, reserved={}) == reference(nodes, pods)
    assert {node.name: store.allocatable_of(node.name) for node in nodes} == before
