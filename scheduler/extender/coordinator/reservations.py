"""Reservations: capacity promised to a planned gang's pods before they are bound.

Every plan sees other gangs' reservations as used capacity, so two gangs planned one after the other never get
the same GPUs. A plan is written through a ``Statement`` (KAI's idea): collect the tentative pod → node picks,
then ``commit`` them all at once (replacing the gang's previous reservations) or ``discard`` them; there is no
half-written plan. Reservations expire (``ttl``) so a gang that never reaches bind cannot hold capacity for ever,
and are released pod by pod as the store reports the pod bound (it then counts as used capacity instead).

Not thread-safe by itself: ``GangTable``, its only owner, holds its lock around every call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from api.core import ResourceVector

__all__ = ["Reservation", "ReservationBook", "Statement"]


@dataclass(frozen=True)
class Reservation:
    pod: str
    gang: str
    node: str
    demand: Mapping[str, int]


@dataclass
class _GangReservations:
    by_pod: dict[str, Reservation]
    created_at: float
    expires_at: float


class ReservationBook:
    def __init__(self) -> None:
        self._gangs: dict[str, _GangReservations] = {}
        self._pod_gang: dict[str, str] = {}
        self._per_node: dict[str, ResourceVector] = {}

    # --- queries -----------------------------------------------------------------------------------------------

    def reserved_on(self, node: str) -> ResourceVector:
        """Units reserved on ``node`` by every gang."""
        return self._per_node.get(node, {})

    def reserved_by_node(self, *, excluding: str | None = None) -> dict[str, ResourceVector]:
        """Units reserved per node by every gang but ``excluding`` (the gang being re-planned); a node with nothing
        reserved is absent. From the running per-node totals less the excluded gang's own: a plan reads this, and
        summing every gang's reservations each time cost more than the rest of a small gang's plan. The vectors
        are shared with the book, which replaces rather than changes them: do not modify them."""
        totals = dict(self._per_node)
        held = self._gangs.get(excluding) if excluding is not None else None
        for reservation in held.by_pod.values() if held else ():
            left = _plus(totals.get(reservation.node, {}), reservation.demand, -1)
            if left:
                totals[reservation.node] = left
            else:
                totals.pop(reservation.node, None)
        return totals

    def of_gang(self, gang: str) -> dict[str, Reservation]:
        held = self._gangs.get(gang)
        return dict(held.by_pod) if held else {}

    def node_of(self, pod: str) -> str | None:
        gang = self._pod_gang.get(pod)
        held = self._gangs.get(gang) if gang else None
        reservation = held.by_pod.get(pod) if held else None
        return reservation.node if reservation else None

    def created_at(self, gang: str) -> float | None:
        held = self._gangs.get(gang)
        return held.created_at if held else None

    def count(self) -> int:
        return len(self._pod_gang)

    # --- changes -----------------------------------------------------------------------------------------------

    def statement(self, gang: str) -> Statement:
        return Statement(self, gang)

    def release_pod(self, pod: str) -> str | None:
        """Drop one pod's reservation (bound, deleted, or finished); returns its gang if it had one."""
        gang = self._pod_gang.pop(pod, None)
        if gang is None:
            return None
        held = self._gangs[gang]
        reservation = held.by_pod.pop(pod)
        self._count(reservation, -1)
        if not held.by_pod:
            del self._gangs[gang]
        return gang

    def release_gang(self, gang: str) -> bool:
        held = self._gangs.get(gang)
        if held is None:
            return False
        for pod in list(held.by_pod):
            self.release_pod(pod)
        self._gangs.pop(gang, None)
        return True

    def extend(self, gang: str, *, expires_at: float) -> None:
        """Push a gang's expiry out (its members keep becoming ready: the plan is being used)."""
        held = self._gangs.get(gang)
        if held is not None:
            held.expires_at = max(held.expires_at, expires_at)

    def expired(self, now: float) -> list[str]:
        """Gangs whose reservations expired by ``now`` (the owner decides what to give back)."""
        return [gang for gang, held in self._gangs.items() if held.expires_at <= now]

    def _install(self, gang: str, picks: dict[str, Reservation], *, now: float, ttl: float) -> None:
        self.release_gang(gang)
        for pod in picks:
            # A pod belongs to one gang; a stale entry under another gang (relabelled pod) is dropped first.
            self.release_pod(pod)
        if not picks:
            return
        self._gangs[gang] = _GangReservations(dict(picks), created_at=now, expires_at=now + ttl)
        for pod, reservation in picks.items():
            self._pod_gang[pod] = gang
            self._count(reservation, 1)

    def _count(self, reservation: Reservation, sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) a reservation in its node's total; a total is replaced, never changed
        in place (``reserved_by_node`` hands them out), and a node whose total comes to nothing is dropped."""
        total = _plus(self._per_node.get(reservation.node, {}), reservation.demand, sign)
        if total:
            self._per_node[reservation.node] = total
        else:
            self._per_node.pop(reservation.node, None)


@dataclass
class Statement:
    """Tentative reservations for one gang: fill with ``reserve``, then ``commit`` or ``discard`` exactly once."""

    book: ReservationBook
    gang: str
    picks: dict[str, Reservation] = field(default_factory=dict)
    closed: bool = False

    def reserve(self, *, pod: str, node: str, demand: Mapping[str, int]) -> None:
        self._check_open()
        self.picks[pod] = Reservation(pod=pod, gang=self.gang, node=node, demand=dict(demand))

    def commit(self, *, now: float, ttl: float) -> None:
        """Make the picks the gang's reservations, replacing whatever it held before."""
        self._check_open()
        self.book._install(self.gang, self.picks, now=now, ttl=ttl)
        self.closed = True

    def discard(self) -> None:
        self._check_open()
        self.picks.clear()
        self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"statement for gang {self.gang} was already committed or discarded")


def _plus(vector: Mapping[str, int], other: Mapping[str, int], sign: int) -> ResourceVector:
    """``vector`` + ``sign`` × ``other`` as a new vector, without the resources that come to zero."""
    total = dict(vector)
    for name, amount in other.items():
        left = total.get(name, 0) + sign * amount
        if left:
            total[name] = left
        else:
            total.pop(name, None)
    return total
