"""The coordinator's shared state: one record per gang, the reservation book, and the lock that guards both.

Readers on the event loop (filter, prioritize, bind) and planners in threads meet here; every method takes the
lock for a few dictionary operations only, never across a solve or a write to the API server.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from scheduler.coordinator.members import GangRef
from scheduler.coordinator.reservations import ReservationBook

__all__ = ["GangRecord", "GangState", "Ledger"]


class GangState(StrEnum):
    WAITING = "Waiting"  # guaranteed pods missing or gated, or the PodGang does not exist yet
    INFEASIBLE = "Infeasible"  # the solver found no placement (reason says why)
    PLANNED = "Planned"  # reservations held, members are being filtered
    BINDING = "Binding"  # some members wait at the bind barrier
    BOUND = "Bound"  # the guaranteed members are bound; extras bind as they come


@dataclass
class GangRecord:
    ref: GangRef
    state: GangState
    reason: str = ""
    plan: dict[str, str] = field(default_factory=dict)  # pod → node, this plan's picks (incl. fixed)
    groups: dict[str, str] = field(default_factory=dict)  # pod → group
    placement_score: float | None = None
    planned_at: float = 0.0
    epoch: int = 0  # the ledger's capacity epoch when this record was last decided
    dirty: bool = False  # a member or the PodGang changed since
    planning: bool = False  # a plan is being computed now: the answer held here may be about to change
    fixed: dict[str, str] = field(default_factory=dict)  # pods waiting at the barrier → their node
    excluded: dict[str, dict[str, float]] = field(default_factory=dict)  # group → node → until (kube refused)

    def excluded_now(self, now: float) -> dict[str, frozenset[str]]:
        return {
            group: frozenset(node for node, until in nodes.items() if until > now)
            for group, nodes in self.excluded.items()
        }

    def describe(self, *, now: float, reserved_since: float | None, waiting: int) -> dict[str, Any]:
        return {
            "gang": self.ref.key,
            "state": str(self.state),
            "plan": dict(self.plan),
            "placementScore": self.placement_score,
            "reservationAgeSeconds": round(now - reserved_since, 3) if reserved_since is not None else None,
            "waitingAtBarrier": waiting,
            "reason": self.reason,
        }


class Ledger:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.records: dict[str, GangRecord] = {}
        self.book = ReservationBook()
        self.epoch = 0  # grows whenever capacity may have been freed: an infeasible gang may fit now

    def record(self, ref: GangRef) -> GangRecord:
        """The gang's record, created in state WAITING if it has none (caller holds the lock)."""
        record = self.records.get(ref.key)
        if record is None:
            record = GangRecord(ref=ref, state=GangState.WAITING, epoch=-1)
            self.records[ref.key] = record
        return record

    def drop(self, gang: str) -> None:
        with self.lock:
            self.records.pop(gang, None)
            if self.book.release_gang(gang):
                self.epoch += 1

    def freed(self) -> None:
        with self.lock:
            self.epoch += 1

    def counts_by_state(self) -> dict[str, int]:
        with self.lock:
            counts = {str(state): 0 for state in GangState}
            for record in self.records.values():
                counts[str(record.state)] += 1
            return counts
