"""The batch's lower bound (``BatchObjective.lower``, with ``placement.batch.bounds``' wholly-free-domains tier)
against the brute-force batch oracle: it never exceeds the best plan that starts every gang of the head, and it is
tight enough that a batch whose gangs cannot all fit in the partly used domains is proven without a model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from placement import ClusterView, GangRequest, GroupRequest, PackScope, SolveOptions, Status
from placement.batch import plan_batch
from placement.batch.bounds import fresh_domains_bound
from placement.batch.objective import BatchObjective
from placement.batch.queue import resolve_head
from placement.future_fit import FutureFit
from tests.placement.batch_oracle import choices, value
from tests.placement.cluster import group, hosts, view
from tests.placement.test_batch_properties import cases
from tests.placement.test_properties import CLIQUE, GPU, HOSTNAME
from topology import HostSpec, Topology


@st.composite
def crowded(draw: st.DrawFn) -> tuple[list[GangRequest], ClusterView]:
    """Two or three cliques of one or two nodes, partly used, and three gangs that each fit the partly used room
    alone but not all together: where the head-wide bound rises above the sum of the gangs' own."""
    specs = []
    free = {}
    for c in range(draw(st.integers(2, 3))):
        for h in range(draw(st.integers(1, 2))):
            name = f"c{c}h{h}"
            gpus = draw(st.sampled_from([4, 8]))
            specs.append(HostSpec(name, {CLIQUE: f"c{c}", HOSTNAME: name}, {GPU: gpus}))
            free[name] = {GPU: draw(st.integers(0, gpus))}
    requests = []
    for k in range(3):
        pods = draw(st.integers(1, 2))
        demand = {GPU: draw(st.sampled_from([1, 2, 4]))}
        packs = draw(st.lists(st.just(PackScope(("w",), None, CLIQUE)), max_size=1))
        members = tuple(f"ns/g{k}-{i}" for i in range(pods))
        requests.append(GangRequest("ns", f"g{k}", (GroupRequest("w", members, demand, pods),), tuple(packs)))
    return requests, ClusterView(Topology(specs), free)


def _check_bound(requests: list[GangRequest], cluster: ClusterView) -> None:
    head = resolve_head(requests, cluster, SolveOptions(workers=1), size=len(requests))
    objective = BatchObjective(head.gangs, FutureFit(head.hosts) if cluster.shapes else None)
    # Gangs refused alone never start: the bound is on the plans of the others, so the oracle judges only those.
    kept = [r for r in requests if r.key not in head.refused]
    if not kept:
        return
    best = min(value(kept, cluster, chosen) for chosen in choices(kept, cluster))
    lower = objective.lower()
    assert len(lower) == len(best)
    assert lower <= best, f"bound {lower} above the best plan {best} ({objective.names()})"


@settings(max_examples=60, deadline=None)
@given(crowded())
def test_the_bound_never_exceeds_the_best_plan_on_crowded_cliques(case: tuple[list[GangRequest], ClusterView]) -> None:
    _check_bound(*case)


@settings(max_examples=40, deadline=None)
@given(cases())
def test_the_bound_never_exceeds_the_best_plan(case: tuple[list[GangRequest], ClusterView]) -> None:
    _check_bound(*case)


def test_gangs_that_each_fit_the_partly_used_clique_but_not_together_are_proven_without_a_model() -> None:
    # Three cliques of one 8-GPU node; c00 has 4 GPUs used, the others are wholly free. Three gangs of one 4-GPU
    # pod: each alone fits c00 (its own bound on fresh cliques is 0), together only one does, so two break a fresh
    # clique: the head-wide bound is 2 = 3 gangs - 1 that the 4 free GPUs of c00 hold. The warm start meets it.
    cluster = view(hosts(cliques=3, per_clique=1), used={"z0c0h0": {GPU: 4}})
    requests = [GangRequest("ns", f"g{k}", (group("w", 1, gpus=4),)) for k in range(3)]
    head = resolve_head(requests, cluster, SolveOptions(workers=1), size=3)
    assert fresh_domains_bound(head.gangs) == 2
    batch = plan_batch(requests, cluster, SolveOptions(workers=1))
    assert all(r.status == Status.PLACED for r in batch.results.values())
    assert batch.objective_parts["fresh:nvlink"] == 2
    assert batch.objective_parts["optimal"] == 1 and batch.objective_parts["models"] == 0


def test_a_gang_that_must_span_cliques_counts_on_the_room_of_all_partly_used_ones() -> None:
    # Three cliques of one 4-GPU node: c00 and c01 have 3 GPUs free, c02 all 4. Gang "wide" (6 one-GPU pods) fits
    # no clique alone, so it spans two at best, and the two partly used hold 3 + 3 = 6: its own bound is 0, and it
    # is not held to one partly used clique's room. With "one" (a single pod) beside it, the partly used room (6)
    # holds the smaller need (1) but not both (1 + 6 = 7): one of them breaks c02, a bound of 1.
    cluster = view(hosts(cliques=3, per_clique=1, gpus=4), used={"z0c0h0": {GPU: 1}, "z0c1h0": {GPU: 1}})
    wide = GangRequest("ns", "wide", (group("w", 6, gpus=1),))
    one = GangRequest("ns", "one", (group("w", 1, gpus=1),))
    options = SolveOptions(workers=1)
    assert fresh_domains_bound(resolve_head([wide], cluster, options, size=1).gangs) == 0
    assert fresh_domains_bound(resolve_head([wide, one], cluster, options, size=2).gangs) == 1
    batch = plan_batch([wide, one], cluster, options)
    assert all(r.status == Status.PLACED for r in batch.results.values())
    assert batch.objective_parts["fresh:nvlink"] == 1 and batch.objective_parts["optimal"] == 1
