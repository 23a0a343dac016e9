"""Reservations: statements commit or discard whole, expire by TTL, and release pod by pod."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.extender.coordinator.reservations import ReservationBook

GPU = "nvidia.com/gpu"


def test_commit_replaces_a_gangs_reservations_and_discard_leaves_nothing() -> None:
    book = ReservationBook()
    first = book.statement("g")
    first.reserve(pod="p0", node="n0", demand={GPU: 4})
    first.reserve(pod="p1", node="n0", demand={GPU: 4})
    first.commit(now=0.0, ttl=10.0)
    assert book.reserved_on("n0") == {GPU: 8}
    again = book.statement("g")
    again.reserve(pod="p0", node="n1", demand={GPU: 4})
    again.commit(now=1.0, ttl=10.0)
    assert book.reserved_on("n0") == {} and book.reserved_on("n1") == {GPU: 4}
    dropped = book.statement("h")
    dropped.reserve(pod="q", node="n2", demand={GPU: 8})
    dropped.discard()
    assert book.reserved_on("n2") == {} and book.count() == 1
    with pytest.raises(RuntimeError):
        dropped.commit(now=2.0, ttl=1.0)


def test_other_gangs_see_reservations_the_planned_gang_does_not() -> None:
    book = ReservationBook()
    for gang, node in (("g", "n0"), ("h", "n1")):
        statement = book.statement(gang)
        statement.reserve(pod=f"{gang}-p", node=node, demand={GPU: 8})
        statement.commit(now=0.0, ttl=10.0)
    assert book.reserved_by_node(excluding="g") == {"n1": {GPU: 8}}
    assert book.reserved_by_node() == {"n0": {GPU: 8}, "n1": {GPU: 8}}


def test_expiry_and_release() -> None:
    book = ReservationBook()
    statement = book.statement("g")
    statement.reserve(pod="p0", node="n0", demand={GPU: 4})
    statement.reserve(pod="p1", node="n0", demand={GPU: 4})
    statement.commit(now=0.0, ttl=10.0)
    assert book.release_pod("p0") == "g"  # bound: its capacity is counted by the store from now on
    assert book.reserved_on("n0") == {GPU: 4}
    book.extend("g", expires_at=20.0)
    assert book.expired(15.0) == []
    assert book.expired(20.0) == ["g"]  # the owner decides what to give back
    assert book.release_gang("g")
    assert book.count() == 0 and book.reserved_on("n0") == {}


_GANGS = ("g", "h", "k")
_PODS = tuple(f"p{i}" for i in range(6))
_operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("commit"),
            st.sampled_from(_GANGS),
            st.dictionaries(
                st.sampled_from(_PODS),
                st.tuples(
                    st.sampled_from(("n0", "n1", "n2")),
                    st.dictionaries(st.sampled_from((GPU, "cpu")), st.integers(0, 4)),
                ),
                max_size=4,
            ),
        ),
        st.tuples(st.just("release_pod"), st.sampled_from(_PODS)),
        st.tuples(st.just("release_gang"), st.sampled_from(_GANGS)),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(_operations)
def test_running_totals_match_a_recount_after_any_operations(operations: list[tuple]) -> None:  # type: ignore[type-arg]
    book = ReservationBook()
    for operation in operations:
        handed_out = book.reserved_by_node(excluding="g")  # a plan's basis, read while the book changes on
        as_handed = {node: dict(vector) for node, vector in handed_out.items()}
        if operation[0] == "commit":
            statement = book.statement(operation[1])
            for pod, (node, demand) in operation[2].items():
                statement.reserve(pod=pod, node=node, demand=demand)
            statement.commit(now=0.0, ttl=10.0)
        elif operation[0] == "release_pod":
            book.release_pod(operation[1])
        else:
            book.release_gang(operation[1])
        assert handed_out == as_handed
        for excluding in (None, *_GANGS):
            recount: dict[str, dict[str, int]] = {}
            for gang in _GANGS:
                for reservation in book.of_gang(gang).values() if gang != excluding else ():
                    vector = recount.setdefault(reservation.node, {})
                    for name, units in reservation.demand.items():
                        vector[name] = vector.get(name, 0) + units
            expected = {
                node: kept for node, vector in recount.items() if (kept := {r: u for r, u in vector.items() if u})
            }
            assert book.reserved_by_node(excluding=excluding) == expected
            if excluding is None:
                assert all(book.reserved_on(node) == expected.get(node, {}) for node in ("n0", "n1", "n2"))
