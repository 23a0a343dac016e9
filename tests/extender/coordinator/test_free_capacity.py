"""The coordinator's free capacity (the store's vectors kept per node, only nodes with something reserved rebuilt)
agrees with the translator's reference computed from the Nodes and Pods, and never changes the store's vectors."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from api.core import Node, Pod
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


_NODES = ("a", "b", "c")
_events = st.lists(
    st.one_of(
        st.tuples(st.just("node"), st.sampled_from(_NODES), st.integers(0, 8)),  # 0: the Node deleted
        st.tuples(st.just("pod"), st.integers(0, 5), st.sampled_from((*_NODES, "gone", ""))),  # "": pending
        st.tuples(st.just("gone"), st.integers(0, 5), st.just("")),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(events=_events, reserved_gpus=st.dictionaries(st.sampled_from(_NODES), st.integers(0, 9)))
def test_what_the_store_keeps_per_node_follows_every_change(
    events: list[tuple[str, Any, Any]], reserved_gpus: dict[str, int]
) -> None:
    """The store keeps what bound pods leave of each node as pods and Nodes come, move and go; whatever the order,
    free capacity read from it is what the reference computes from the objects themselves."""
    store = ClusterStore()
    nodes: dict[str, Node] = {}
    pods: dict[str, Pod] = {}
    for kind, subject, value in events:
        _apply(store, nodes, pods, kind, subject, value)
    reserved = {node: {GPU: gpus} for node, gpus in reserved_gpus.items()}
    expected = reference(list(nodes.values()), list(pods.values()), reservations=reserved)
    assert free_capacity(store=store, reserved=reserved) == expected


@settings(max_examples=150, deadline=None)
@given(events=_events, reservations=st.lists(st.tuples(st.sampled_from(_NODES), st.integers(0, 9)), max_size=30))
def test_free_capacity_read_after_every_change_is_the_references(
    events: list[tuple[str, Any, Any]], reservations: list[tuple[str, int]]
) -> None:
    """Read after every change, as plans follow one another: a node whose store vector and reserved total are the
    objects of the last read is answered from it, and the answer is still the reference's whatever changed since
    (pods and Nodes, or a reservation replaced as the reservation book replaces it)."""
    store = ClusterStore()
    nodes: dict[str, Node] = {}
    pods: dict[str, Pod] = {}
    reserved: dict[str, dict[str, int]] = {}
    for step, (kind, subject, value) in enumerate(events):
        _apply(store, nodes, pods, kind, subject, value)
        if step < len(reservations):
            node, gpus = reservations[step]
            if gpus:
                reserved[node] = {GPU: gpus}  # another object, as the book's totals are replaced
            else:
                reserved.pop(node, None)
        expected = reference(list(nodes.values()), list(pods.values()), reservations=reserved)
        assert free_capacity(store=store, reserved=dict(reserved)) == expected


def _apply(
    store: ClusterStore, nodes: dict[str, Node], pods: dict[str, Pod], kind: str, subject: Any, value: Any
) -> None:
    """One drawn event: a Node added or changed (``value`` GPUs) or deleted (0), a pod placed, left pending or gone;
    applied to the store as its watch would, and to the objects the reference reads."""
    if kind == "node" and value:
        nodes[subject] = make_node(subject).gpus(value).obj()
        store.apply("Node", "MODIFIED", nodes[subject])
    elif kind == "node" and subject in nodes:
        store.apply("Node", "DELETED", nodes.pop(subject))
    elif kind == "pod":
        builder = make_pod(f"p{subject}").gpus(1 + subject % 3)
        pods[f"p{subject}"] = (builder.on(value) if value else builder).obj()
        store.apply("Pod", "MODIFIED", pods[f"p{subject}"])
    elif f"p{subject}" in pods:
        store.apply("Pod", "DELETED", pods.pop(f"p{subject}"))
