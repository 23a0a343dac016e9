"""Property tests of queue-aware planning against the brute-force batch oracle, on tiny clusters: the batch's
results are sound together (``batch_violations``), and the gangs it starts, where, are as good as the best way to
start any of them under the oracle's own objective — priority classes first, then GPUs, queue order, topology
quality and future fit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from placement import ClusterView, GangRequest, GroupRequest, PackScope, SolveOptions, Status
from placement.batch import plan_batch
from placement.validation import batch_violations
from tests.placement.batch_oracle import choices, value
from tests.placement.cluster import gang, group, hosts, view
from tests.placement.oracle import plan_of
from tests.placement.test_properties import CLIQUE, GPU, HOSTNAME, ZONE, clusters


@st.composite
def queues(draw: st.DrawFn, nodes: list[str]) -> list[GangRequest]:
    found = []
    for k in range(draw(st.integers(2, 3))):
        pods = draw(st.integers(1, 2))
        name = f"g{k}"
        group = GroupRequest(
            "w",
            tuple(f"ns/{name}-{i}" for i in range(pods)),
            {GPU: draw(st.sampled_from([1, 2, 4]))},
            pods,
            draw(st.none() | st.frozensets(st.sampled_from(nodes), min_size=1)),
        )
        key = st.sampled_from([ZONE, CLIQUE, HOSTNAME])
        packs = draw(st.lists(st.builds(PackScope, st.just(("w",)), st.none() | key, st.none() | key), max_size=1))
        found.append(GangRequest("ns", name, (group,), tuple(packs), draw(st.sampled_from([0, 0, 1]))))
    return found


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[GangRequest], ClusterView]:
    cluster = draw(clusters())
    return draw(queues(sorted(cluster.topology.hosts))), cluster


@settings(max_examples=40, deadline=None)
@given(cases())
def test_the_batch_starts_the_best_set_of_gangs_at_the_best_places(case: tuple[list[GangRequest], ClusterView]) -> None:
    requests, view = case
    batch = plan_batch(requests, view, SolveOptions(time_limit_seconds=5, workers=1), size=len(requests))
    assert batch_violations(requests, view, batch.results, batch.head) == []
    started = {key: result for key, result in batch.results.items() if result.status == Status.PLACED}
    by_key = {r.key: r for r in requests}
    got = value(requests, view, {key: plan_of(by_key[key], dict(r.assignment)) for key, r in started.items()})
    best = min(value(requests, view, chosen) for chosen in choices(requests, view))
    assert got == best
    assert batch.objective_parts["optimal"] == 1


def test_a_higher_priority_gang_is_never_left_for_a_lower_one() -> None:
    # One 8-GPU node. The old gang (priority 0) wants 4 GPUs, the new one (priority 1) all 8: only one can start,
    # and it is the higher-priority one, although it is younger and the older one would leave room to spare.
    cluster = view(hosts(cliques=1, per_clique=1))
    old = GangRequest("ns", "old", gang(group("w", 1, gpus=4)).groups, (), 0)
    new = GangRequest("ns", "new", (group("v", 1, gpus=8),), (), 1)
    batch = plan_batch([old, new], cluster, SolveOptions(workers=1))
    assert batch.results["ns/new"].status == Status.PLACED
    assert batch.results["ns/old"].status == Status.DEFERRED and "ns/new" in batch.results["ns/old"].reason
    assert batch.head == ("ns/new", "ns/old")


def test_on_a_cluster_too_large_to_model_whole_each_gang_gets_a_neighbourhood() -> None:
    # Four cliques of two 8-GPU nodes and room for a model of 4 nodes: each gang is modelled on a few of its
    # domains only (exact 0), yet all four gangs (a clique each: 2 × 8 = 16 GPUs) start, in four cliques, and the
    # batch is proven best anyway: every gang sits at its own bound (one clique, one zone), nothing waits.
    cluster = view(hosts(cliques=4))
    requests = [
        GangRequest("ns", f"g{k}", (group("w", 2, gpus=8),), (PackScope(("w",), required=CLIQUE),)) for k in range(4)
    ]
    batch = plan_batch(requests, cluster, SolveOptions(workers=1, model_nodes=4))
    assert batch_violations(requests, cluster, batch.results, batch.head) == []
    assert all(r.status == Status.PLACED for r in batch.results.values())
    cliques = {node[:4] for r in batch.results.values() for node in r.assignment.values()}
    assert len(cliques) == 4
    assert batch.objective_parts["exact"] == 0 and batch.objective_parts["optimal"] == 1


def test_a_malformed_request_is_refused_alone() -> None:
    cluster = view(hosts())
    bad = GangRequest("ns", "bad", (GroupRequest("w", ("ns/p", "ns/p"), {GPU: 1}, 2),))
    good = GangRequest("ns", "good", (group("w", 1, gpus=1),))
    batch = plan_batch([bad, good], cluster, SolveOptions(workers=1))
    assert batch.results["ns/bad"].status == Status.INVALID and "appears twice" in batch.results["ns/bad"].reason
    assert batch.results["ns/good"].status == Status.PLACED


def test_a_neighbourhood_offers_a_partly_used_domain_whose_used_nodes_are_full() -> None:
    # Four cliques of three 8-GPU nodes, and room for a model of 3 nodes. Clique c00's one used node is full, so no
    # candidate of c00 is partly used (the full node is pruned), yet c00 is not wholly free: a gang placed there
    # breaks no fresh clique. Its neighbourhood must offer c00 (first, as the partly used), where the greedy meets
    # every bound and no model is needed; ranking cliques by their candidates alone put c00 last, the gang in a
    # fresh clique, and a model that could not close the gap outside the neighbourhood.
    cluster = view(hosts(cliques=4, per_clique=3), used={"z0c0h0": {GPU: 8}})
    request = GangRequest("ns", "g", (group("w", 2, gpus=4),))
    batch = plan_batch([request], cluster, SolveOptions(workers=1, model_nodes=3))
    result = batch.results["ns/g"]
    assert result.status == Status.PLACED
    assert {node[:4] for node in result.assignment.values()} == {"z0c0"}
    assert batch.objective_parts["models"] == 0 and batch.objective_parts["optimal"] == 1
