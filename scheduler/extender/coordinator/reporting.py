"""The PodGang status writer: what the table's state changes mean on the PodGang, written in the background.

Bound → ``Scheduled=True`` (phase Starting, placementScore) and a Normal ``Scheduled`` event. PartiallyBound →
``Scheduled=False, reason=PartiallyBound`` naming each group's bound count, and a Warning event: a partial gang is
repaired, never silent. A gang that leaves PartiallyBound with nothing bound gets ``Scheduled=False`` again. Writes
that fail are tried again on the worker's next tick, so a partial gang is never left unreported by an API hiccup.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from scheduler.extender.cluster_writer import ClusterWriter
from scheduler.extender.coordinator.gang_state import GangState
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangRef, gang_members
from scheduler.extender.coordinator.status import (
    bound_counts,
    partially_bound_status,
    running_status,
    scheduled_status,
    unscheduled_status,
)
from scheduler.extender.coordinator.work import WorkQueue
from scheduler.extender.state.store import ClusterStore
from scheduler.kube.errors import WriteError

__all__ = ["PodGangStatusReporter"]

log = logging.getLogger(__name__)

_SHOWN = (GangState.BOUND, GangState.PARTIALLY_BOUND)


class PodGangStatusReporter:
    def __init__(
        self,
        *,
        store: ClusterStore,
        table: GangTable,
        writer: ClusterWriter,
        work: WorkQueue,
        wall_clock: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._table = table
        self._writer = writer
        self._work = work
        self._wall_clock = wall_clock
        self._shown: dict[str, GangState] = {}  # what the PodGang says now, as far as we wrote it
        self._failed: dict[str, GangRef] = {}  # reports whose write failed: retried by ``retry_failed``
        table.subscribe(self.on_state)

    def on_state(self, ref: GangRef, before: GangState | None, after: GangState | None) -> None:
        """A table listener: queue a report when a gang enters or leaves a state the PodGang shows."""
        if not ref.solo and (before in _SHOWN or after in _SHOWN):
            self._work.put(("report", ref))

    def retry_failed(self) -> None:
        """Report again what could not be written (the background worker calls this once per tick)."""
        failed, self._failed = self._failed, {}
        for ref in failed.values():
            self.report(ref)

    def report(self, ref: GangRef) -> None:
        summary = self._table.summary(ref.key)
        podgang = self._store.podgang(ref.key)
        if summary is None or podgang is None:
            self._shown.pop(ref.key, None)
            self._failed.pop(ref.key, None)
            return
        shown = self._shown.get(ref.key)
        now = self._wall_clock()
        if summary.state is GangState.BOUND and shown is not GangState.BOUND:
            status = scheduled_status(podgang, placement_score=summary.placement_score, now=now)
            event = ("Normal", "Scheduled", f"every guaranteed pod bound (placementScore {summary.placement_score})")
        elif summary.state is GangState.PARTIALLY_BOUND and shown is not GangState.PARTIALLY_BOUND:
            status = partially_bound_status(podgang, counts=summary.counts, now=now)
            event = ("Warning", "PartiallyBound", f"{bound_counts(summary.counts)}; repairing")
            log.warning("gang partially bound gang=%s detail=%s", ref.key, bound_counts(summary.counts))
        elif summary.state not in (*_SHOWN, GangState.RELEASING) and shown is GangState.PARTIALLY_BOUND:
            # (Releasing is a repair under way: the PodGang goes on saying PartiallyBound until it is whole.)
            status, event = unscheduled_status(podgang, reason=summary.reason, now=now), None
        else:
            return
        if not self._write(
            "status", self._writer.patch_podgang_status, namespace=ref.namespace, name=ref.name, status=status
        ):
            self._failed[ref.key] = ref
            return
        self._shown[ref.key] = summary.state
        if event is not None:
            kind, reason, message = event
            self._write(
                "event",
                self._writer.record_event,
                namespace=ref.namespace,
                kind="PodGang",
                name=ref.name,
                uid=podgang.metadata.uid,
                reason=reason,
                message=message,
                type=kind,
            )

    def mark_running(self, ref: GangRef) -> None:
        members = gang_members(self._store, ref)
        status = None if isinstance(members, str) else running_status(members)
        if status is not None:
            self._write(
                "status", self._writer.patch_podgang_status, namespace=ref.namespace, name=ref.name, status=status
            )

    def _write(self, what: str, write: Callable[..., None], **kwargs: Any) -> bool:
        try:
            write(**kwargs)
        except WriteError as err:
            log.warning("podgang %s not written gang=%s/%s error=%s", what, kwargs["namespace"], kwargs["name"], err)
            return False
        return True
