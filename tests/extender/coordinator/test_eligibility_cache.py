"""Eligibility kept while the Nodes hold: an answer is reused for pods with the same placement rules, and any Node
change that eligibility reads (labels, taints, unschedulable, a Node added or deleted) gives a fresh answer;
a heartbeat does not."""

from __future__ import annotations

from api.core import Node, Pod
from scheduler.extender.coordinator.eligibility_cache import EligibilityCache
from scheduler.extender.state import ClusterStore
from scheduler.extender.translation.eligibility import eligible_nodes
from scheduler.extender.translation.gang_request import placement_signature
from tests.builders import make_node, make_pod

POOL = "example.com/pool"


def _store(*nodes: Node) -> ClusterStore:
    store = ClusterStore()
    store.replace("Node", list(nodes))
    return store


def _eligible(cache: EligibilityCache, store: ClusterStore, pod: Pod) -> frozenset[str] | None:
    nodes, eligible = cache.nodes(store)
    found = eligible(pod, placement_signature(pod))
    assert found == eligible_nodes(pod, nodes)  # the cache never answers other than judging every node would
    return found


def test_pods_with_the_same_rules_share_one_answer_while_the_nodes_hold() -> None:
    store = _store(make_node("a").label(POOL, "x").obj(), make_node("b").label(POOL, "y").obj())
    cache = EligibilityCache()
    first = make_pod("p0").node_selector(POOL, "x").obj()
    second = make_pod("p1").node_selector(POOL, "x").obj()
    other = make_pod("q").node_selector(POOL, "y").obj()
    assert _eligible(cache, store, first) == frozenset({"a"})
    assert _eligible(cache, store, second) == frozenset({"a"})
    assert cache.judged == 1
    assert _eligible(cache, store, other) == frozenset({"b"})
    assert cache.judged == 2


def test_a_heartbeat_keeps_the_answers() -> None:
    node = make_node("a").label(POOL, "x").obj()
    store = _store(node, make_node("b").obj())
    cache = EligibilityCache()
    pod = make_pod("p").node_selector(POOL, "x").obj()
    assert _eligible(cache, store, pod) == frozenset({"a"})
    beat = node.model_copy(update={"metadata": node.metadata.model_copy()})  # a new object, nothing placement reads
    store.apply("Node", "MODIFIED", beat)
    assert _eligible(cache, store, pod) == frozenset({"a"})
    assert cache.judged == 1


def test_every_node_change_eligibility_reads_gives_a_fresh_answer() -> None:
    store = _store(make_node("a").label(POOL, "x").obj(), make_node("b").obj(), make_node("z").taint("gpu", "x").obj())
    cache = EligibilityCache()
    selective = make_pod("p").node_selector(POOL, "x").obj()
    anywhere = make_pod("q").obj()
    assert _eligible(cache, store, selective) == frozenset({"a"})
    assert _eligible(cache, store, anywhere) == frozenset({"a", "b"})
    store.apply("Node", "MODIFIED", make_node("b").label(POOL, "x").obj())  # relabelled
    assert _eligible(cache, store, selective) == frozenset({"a", "b"})
    store.apply("Node", "MODIFIED", make_node("a").label(POOL, "x").taint("dedicated", "infra").obj())  # tainted
    assert _eligible(cache, store, selective) == frozenset({"b"})
    assert _eligible(cache, store, anywhere) == frozenset({"b"})
    store.apply("Node", "MODIFIED", make_node("b").label(POOL, "x").unschedulable().obj())  # cordoned
    assert _eligible(cache, store, anywhere) == frozenset()
    store.apply("Node", "ADDED", make_node("c").label(POOL, "x").obj())  # added
    assert _eligible(cache, store, selective) == frozenset({"c"})
    store.apply("Node", "DELETED", make_node("c").obj())  # deleted
    assert _eligible(cache, store, selective) == frozenset()
    assert cache.judged == 8


def test_an_answer_judged_on_older_nodes_is_not_kept() -> None:
    store = _store(make_node("a").label(POOL, "x").obj(), make_node("b").obj())
    cache = EligibilityCache()
    pod = make_pod("p").node_selector(POOL, "x").obj()
    _, old = cache.nodes(store)  # a plan that read the Nodes, then the Nodes change before it asks
    store.apply("Node", "MODIFIED", make_node("a").obj())
    assert _eligible(cache, store, pod) == frozenset()
    assert old(pod, placement_signature(pod)) == frozenset({"a"})  # judged on the Nodes that plan holds
    assert _eligible(cache, store, pod) == frozenset()  # and not kept for plans on the newer ones
