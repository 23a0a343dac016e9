"""Property: whatever gangs race through filter → bind in whatever order, no node is overcommitted, no gang is
left partly bound, and a gang that must share one NVLink domain does."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.extender_support import CLIQUE, assert_no_overcommit, bind_body, filter_one, gang, harness, node, run

_gangs = st.lists(
    st.tuples(st.integers(1, 4), st.sampled_from([1, 2, 4, 8]), st.booleans()),  # pods, GPUs per pod, packed
    min_size=2,
    max_size=4,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(domains=st.integers(1, 3), per_domain=st.integers(1, 3), specs=_gangs, order=st.randoms(use_true_random=False))
def test_racing_gangs_never_overcommit_nor_half_bind(domains: int, per_domain: int, specs, order) -> None:  # type: ignore[no-untyped-def]
    nodes = [node(f"n{d}-{i}", clique=f"c{d}") for d in range(domains) for i in range(per_domain)]
    names = [n.name for n in nodes]
    gangs = [
        gang(f"g{k}", workers=w, gpus=g, required=CLIQUE if packed else None) for k, (w, g, packed) in enumerate(specs)
    ]
    h = harness(
        nodes=nodes, pods=[p for pods, _ in gangs for p in pods], podgangs=[pg for _, pg in gangs], bind_wait=0.05
    )
    members = [p for pods, _ in gangs for p in pods]
    order.shuffle(members)

    async def main() -> None:
        async with h.client() as client:

            async def one(p):  # type: ignore[no-untyped-def]
                reply = await filter_one(client, p, names)
                if reply["NodeNames"]:
                    await client.post("/bind", json=bind_body(p, reply["NodeNames"][0]))

            await asyncio.gather(*(one(p) for p in members))

    run(main)
    assert_no_overcommit(h.store)
    bound = h.writer.bound_nodes()
    for (pods, _), (_, _, packed) in zip(gangs, specs, strict=True):
        placed = [bound[p.key] for p in pods if p.key in bound]
        assert len(placed) in (0, len(pods)), f"partly bound gang: {placed}"
        if packed and placed:
            assert len({h.store.node(n).metadata.labels[CLIQUE] for n in placed}) == 1
