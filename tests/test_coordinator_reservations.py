"""Reservations: statements commit or discard whole, expire by TTL, and release pod by pod."""

from __future__ import annotations

import pytest

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
