"""Host arrays on one topology share what they derive from it alone; another topology (other labels on the same
node names) gets its own, and the shared arrays cannot be written through. Free arrays built from the last view's
are what each view holds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement import ClusterView
from placement.arrays import HostArrays
from placement.problem import Problem
from tests.placement.cluster import CLIQUE, GPU, gang, group, hosts, view
from topology import HostSpec


def test_views_on_one_topology_share_its_tables_and_another_topology_does_not() -> None:
    first = view(hosts(cliques=2))
    busy = ClusterView(first.topology, {name: {GPU: 0} for name in first.free})  # same topology, other free
    relabelled = view(HostSpec(h.name, {**h.labels, CLIQUE: "c00"}, h.allocatable) for h in hosts(cliques=2))
    a, b, c = (HostArrays(v, [GPU]) for v in (first, busy, relabelled))
    assert a.level("nvlink") is b.level("nvlink") and a.key(CLIQUE) is b.key(CLIQUE)
    assert a.free[GPU].tolist() == [8, 8, 8, 8] and b.free[GPU].tolist() == [0, 0, 0, 0]
    assert sorted(a.key(CLIQUE)[1]) == ["c00", "c01"] and c.key(CLIQUE)[1] == ["c00"]
    ids, _ = a.level("nvlink")
    with pytest.raises(ValueError, match="read-only"):
        ids[0] = 1
    assert np.array_equal(a.allocatable(GPU), [8, 8, 8, 8])


_RESOURCES = (GPU, "cpu", "memory")
_steps = st.lists(
    st.one_of(
        # a node's vector replaced by another object (what a plan's view does where something changed)
        st.tuples(
            st.just("replace"), st.integers(0, 7), st.dictionaries(st.sampled_from(_RESOURCES), st.integers(0, 9))
        ),
        st.tuples(st.just("drop"), st.integers(0, 7), st.just({})),  # the node missing from the view
        # arrays asked for some of the resources: each must be what the view holds, whatever was asked before
        st.tuples(st.just("arrays"), st.just(0), st.sets(st.sampled_from(_RESOURCES), min_size=1).map(sorted)),
        st.tuples(st.just("everything"), st.just(0), st.just({})),  # every vector another object at once
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(steps=_steps)
def test_free_arrays_are_what_each_view_holds_when_built_from_the_last_views(steps: list[tuple[str, int, Any]]) -> None:
    """Free arrays are rebuilt only where a node's vector is another object than the last view's: however views
    follow one another (nodes changed, dropped, resources asked for or not), each is what its view holds."""
    base = view(hosts(cliques=4))
    names = list(base.topology.hosts)
    free: dict[str, dict[str, int]] = dict(base.free)
    for kind, index, value in steps:
        name = names[index]
        if kind == "replace":
            free[name] = dict(value)
        elif kind == "drop":
            free.pop(name, None)
        elif kind == "everything":
            free = {node: dict(vector) for node, vector in free.items()}
        else:
            arrays = HostArrays(ClusterView(base.topology, dict(free), replaced=True), value)
            for resource in value:
                assert arrays.free[resource].tolist() == [free.get(n, {}).get(resource, 0) for n in names], resource
            arrays.free[value[0]][0] = -1  # the caller's own: the next view must not see it


@settings(max_examples=100, deadline=None)
@given(order=st.permutations(range(8)), used=st.lists(st.integers(0, 8), min_size=8, max_size=8))
def test_candidates_are_in_name_order_and_indexed_whatever_the_hosts_order(order: list[int], used: list[int]) -> None:
    """A problem's candidates are its nodes in name order, each indexed at its own host: read off the host order
    when that is name order, sorted otherwise."""
    specs = hosts(cliques=4)
    shuffled = [specs[i] for i in order]
    cluster = view(shuffled, used={h.name: {GPU: u} for h, u in zip(specs, used, strict=True)})
    problem = Problem(gang(group("w", 3, gpus=4)), cluster)
    expected = sorted(h.name for h, u in zip(specs, used, strict=True) if 8 - u >= 4)
    assert list(problem.nodes) == expected
    names = problem.hosts.names
    assert [names[i] for i in problem.arrays.host_index.tolist()] == expected
    assert problem.arrays.free[GPU].tolist() == [cluster.free[n][GPU] for n in expected]


def test_a_view_that_changes_its_vectors_in_place_is_read_anew() -> None:
    """Without ``replaced`` a caller may change a node's vector in place between views (a fill that debits what
    each gang took): nothing is carried over, so the arrays follow."""
    base = view(hosts(cliques=2))
    free = {node: dict(vector) for node, vector in base.free.items()}
    first = HostArrays(ClusterView(base.topology, free), [GPU])
    free["z0c0h0"][GPU] = 3  # the same object, changed
    second = HostArrays(ClusterView(base.topology, free), [GPU])
    assert first.free[GPU].tolist() == [8, 8, 8, 8] and second.free[GPU].tolist() == [3, 8, 8, 8]
