"""Host arrays on one topology share what they derive from it alone; another topology (other labels on the same
node names) gets its own, and the shared arrays cannot be written through."""

from __future__ import annotations

import numpy as np
import pytest

from placement import ClusterView
from placement.arrays import HostArrays
from tests.placement.cluster import CLIQUE, GPU, hosts, view
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
