"""kube-scheduler's assume cache in the model (``benchmarks.sim.kubescheduler.cache``): the room a cycle sees is
allocatable less what bound and assumed pods hold, wherever the informer last saw them."""

from __future__ import annotations

from benchmarks.sim.kubescheduler.cache import Cache

GPU = "nvidia.com/gpu"
FOUR = ((GPU, 4), ("pods", 1))


def _cache(*nodes: str) -> Cache:
    cache = Cache()
    for name in nodes:
        cache.set_node(name, {GPU: 4, "pods": 110})
    return cache


def test_an_assumed_pod_holds_its_node_until_forgotten_and_the_node_comes_back_last() -> None:
    cache = _cache("a", "b", "c")
    assert cache.feasible(FOUR) == ["a", "b", "c"]
    cache.assume("p", node="a", demand=FOUR)
    assert cache.feasible(FOUR) == ["b", "c"]  # 4 GPUs of 4 held on a
    assert cache.forget("p") and not cache.forget("p")
    assert cache.feasible(FOUR) == ["b", "c", "a"]


def test_a_pod_seen_bound_elsewhere_moves_its_room_and_is_no_longer_assumed() -> None:
    cache = _cache("a", "b")
    cache.assume("p", node="a", demand=FOUR)
    cache.confirm("p", node="b", demand=FOUR)  # someone else (the extender's release) bound it to b
    assert cache.feasible(FOUR) == ["a"] and not cache.assumed("p")
    assert not cache.forget("p")  # a failed bind call cannot take back what the API shows bound
    assert cache.remove("p") and cache.feasible(FOUR) == ["a", "b"]


def test_a_resource_no_node_has_fits_nowhere_until_a_node_brings_it_with_its_pods_counted() -> None:
    cache = _cache("a")
    rdma = (("example.com/rdma", 1), ("pods", 1))
    assert cache.feasible(rdma) == []
    cache.confirm("q", node="b", demand=rdma)  # bound to b before the informer listed b
    cache.set_node("b", {"example.com/rdma": 1, "pods": 110})
    assert cache.feasible(rdma) == []  # b's one unit is q's
    cache.set_node("c", {"example.com/rdma": 2, "pods": 110})
    assert cache.feasible(rdma) == ["c"]


def test_alone_the_least_allocated_node_with_room_is_chosen() -> None:
    cache = _cache("a", "b", "c")
    one = ((GPU, 1), ("pods", 1))
    cache.confirm("x", node="a", demand=((GPU, 2), ("pods", 1)))
    cache.confirm("y", node="c", demand=((GPU, 1), ("pods", 1)))
    assert cache.least_allocated(one) == "b"  # free GPU fractions after placing: a 1/4, b 3/4, c 2/4
