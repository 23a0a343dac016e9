"""A PodCliqueSet's update record: ``status.currentGenerationHash`` and ``status.updateProgress``, kept as Grove's
PodCliqueSet controller keeps them (``reconcilespec.go: processGenerationHashChange`` starts an update,
``components/podcliquesetreplica/rollingupdate.go`` walks it replica by replica).

``Rollout`` is the one owner of that record in a pass: the components read it (which PCS replica is being replaced,
whether a PodClique may take the new template yet) and ``pcs_replica`` moves it on through the transitions below;
the PodCliqueSet's status reporter writes it. The generation hash covers every clique's pod template
(``template_hash.generation_hash``), so only a change to what pods are made of starts an update::

    (no hash) ──first pass: record the hash──► Settled(h)
    Settled(h) ──template changed to h'──► Rolling(h', none) ──select r──► Rolling(h', r)
    Rolling(h', r) ──r done: select r'──► Rolling(h', r') … ──r done, none left: complete──► Settled(h')
    Rolling(h', ·) ──template changed again to h''──► Rolling(h'', none)   (the update restarts on the newest)
    OnDelete: Settled(h) ──h'──► Settled(h') with updateEndedAt = updateStartedAt: pods change only when deleted.

Timestamps are written as a ``metav1.Time`` is (RFC 3339, seconds, ``Z``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from api.grove import PodCliqueSet
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.rules.defaults import ON_DELETE, ROLLING_RECREATE
from scheduler.reconcile.status.updates import UpdateTarget

__all__ = ["Rollout"]


@dataclass
class Rollout:
    generation: str  # the generation hash of the PodCliqueSet's current template
    template_hashes: dict[str, str]  # the current pod-template hash of each clique template, by clique name
    on_delete: bool
    progress: KubeObject | None = None  # status.updateProgress as it should be written (Grove's fields, no counts)
    _currently: list[KubeObject] = field(default_factory=list)

    @classmethod
    def observe(cls, pcs: PodCliqueSet, *, generation: str, template_hashes: dict[str, str], now: str) -> Rollout:
        """The record as the PodCliqueSet's status holds it, with Grove's ``processGenerationHashChange`` applied:
        a generation hash seen for the first time is only recorded; a changed one starts (or restarts) an update."""
        status = pcs.status or {}
        strategy = (pcs.spec.updateStrategy or {}).get("type", ROLLING_RECREATE)
        progress = status.get("updateProgress")
        rollout = cls(
            generation=generation,
            template_hashes=template_hashes,
            on_delete=strategy == ON_DELETE,
            progress=copy.deepcopy(progress) if isinstance(progress, dict) else None,
        )
        if rollout.progress is not None:
            currently = rollout.progress.pop("currentlyUpdating", None)
            rollout._currently = [dict(entry) for entry in currently or [] if isinstance(entry, dict)]
        recorded = status.get("currentGenerationHash")
        if recorded is not None and recorded != generation:
            rollout._begin(now)
        return rollout

    # --- reads ---------------------------------------------------------------------------------------------

    @property
    def rolling(self) -> bool:
        """A RollingRecreate update is under way (Grove's ``isAutoUpdateInProgress``)."""
        return not self.on_delete and self.progress is not None and not self.progress.get("updateEndedAt")

    @property
    def updating(self) -> int | None:
        """The PodCliqueSet replica being replaced now, if any."""
        if not self.rolling or not self._currently:
            return None
        index = self._currently[0].get("replicaIndex")
        return index if isinstance(index, int) and not isinstance(index, bool) else None

    def takes_template(self, replica: int) -> bool:
        """Whether the PodCliques of PCS replica ``replica`` carry the current template now. Always, except while
        a rolling update is under way: then only the replica it is replacing does, and the others keep the
        template their pods were made from, so a pod re-created there (evicted, deleted) matches its gang."""
        return not self.rolling or replica == self.updating

    def target(self, replica: int, *, now: str) -> UpdateTarget:
        """What the update fields of PCS replica ``replica``'s PodCliques and scaling groups are computed against."""
        return UpdateTarget(
            generation=self.generation,
            eligible=self.takes_template(replica),
            rolling=self.rolling,
            on_delete=self.on_delete,
            now=now,
        )

    def status(self) -> KubeObject:
        """``currentGenerationHash`` and ``updateProgress`` as they should be written (counts are added by the
        reporter, which computes them from the PodCliques and scaling groups)."""
        status: KubeObject = {"currentGenerationHash": self.generation}
        if self.progress is not None:
            progress = copy.deepcopy(self.progress)
            if self._currently:
                progress["currentlyUpdating"] = copy.deepcopy(self._currently)
            status["updateProgress"] = progress
        return status

    # --- transitions ---------------------------------------------------------------------------------------

    def _begin(self, now: str) -> None:
        """A new template: the update starts afresh, whatever was under way (Grove's ``initUpdateProgress``). With
        OnDelete it also ends at once: nothing is left for the reconciler to do."""
        self.progress = {"updateStartedAt": now}
        if self.on_delete:
            self.progress["updateEndedAt"] = now
        self._currently = []

    def select(self, replica: int, now: str) -> None:
        """Start replacing PCS replica ``replica``; the one before it is done (one at a time, as Grove does)."""
        self._currently = [{"replicaIndex": replica, "updateStartedAt": now}]

    def complete(self, now: str) -> None:
        """Every replica is on the new template: the update is over."""
        if self.progress is not None:
            self.progress["updateEndedAt"] = now
        self._currently = []
