"""The reconcile loop: read a PodCliqueSet and what exists for it, converge, report status.

One ``reconcile`` is level-triggered and idempotent: it derives everything from the objects it lists, never from
memory of an earlier pass, so a restart (or two passes in a row) neither duplicates nor loses a pod. Existing pods
are recognised by their PodClique and pod-index labels plus our owner reference; a missing index is refilled with
the lowest free one, as Grove does. Order inside a pass: delete what is no longer wanted, create missing pods
(gated), create or update PodGangs listing them, then lift the gates Grove would lift.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from api.grove import ClusterTopologyBinding, PodCliqueSet
from scheduler.reconcile.api import ApiError, Conflict, KubeObject, ObjectKey, ReconcileApi
from scheduler.reconcile.defaults import with_defaults
from scheduler.reconcile.desired import CliquePlan, Desired, desired_state
from scheduler.reconcile.fields import FieldError
from scheduler.reconcile.gang_sync import GangSync
from scheduler.reconcile.gangs import is_terminating, service_object
from scheduler.reconcile.gates import lift_gates
from scheduler.reconcile.immutability import SHAPE_STATUS_KEY, update_errors
from scheduler.reconcile.names import LABEL_POD_INDEX, LABEL_PODCLIQUE, LABEL_PODGANG, base_gang_name
from scheduler.reconcile.pods import pod_name, pod_object
from scheduler.reconcile.reporting import StatusReporter
from scheduler.reconcile.status import (
    Clock,
    pod_is_bound,
)
from scheduler.reconcile.topology_rules import topology_name
from scheduler.reconcile.validation import validate

__all__ = ["Outcome", "Reconciler"]

log = logging.getLogger(__name__)
_NAME_ATTEMPTS = 5  # random-suffix collisions are ~1 in 14 million; five tries is plenty


def _utcnow() -> datetime:
    return datetime.now(UTC)


class PodRefused(Exception):
    """The API server rejected a pod built from a clique's podSpec (400/422): the spec is invalid."""

    def __init__(self, error: FieldError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class Outcome:
    """What one pass did: writes issued, whether the spec was valid, and pods still waiting for their gate."""

    writes: int = 0
    valid: bool = True
    gated: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class Reconciler:
    api: ReconcileApi
    scheduler_name: str = "grove"
    rng: random.Random = field(default_factory=random.Random)
    clock: Clock = _utcnow

    # --- loop ----------------------------------------------------------------------------------------------

    def all_keys(self) -> set[ObjectKey]:
        return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in self.api.list_podcliquesets()}

    def converge(self, *, max_rounds: int = 20) -> int:
        """Reconcile every PodCliqueSet, then whatever our own writes touched, until a pass changes nothing.
        Returns the number of rounds; used by tests and ``--dry-run`` (the in-memory API never blocks)."""
        pending = self.all_keys() | self.api.changes(0)
        for rounds in range(1, max_rounds + 1):
            for namespace, name in sorted(pending):
                self.reconcile(namespace, name)
            pending = self.api.changes(0)
            if not pending:
                return rounds
        raise RuntimeError(f"no convergence after {max_rounds} rounds: {sorted(pending)}")

    def run(self, *, stop: threading.Event, resync_seconds: float = 60.0, poll_seconds: float = 1.0) -> None:
        """Serve until ``stop``: reconcile what changed, retry what failed, resync everything periodically."""
        pending: set[ObjectKey] = set()
        next_resync = time.monotonic()
        while not stop.is_set():
            if time.monotonic() >= next_resync:
                try:
                    pending |= self.all_keys()
                    next_resync = time.monotonic() + resync_seconds
                except ApiError as err:  # API server unreachable or refusing: try again shortly
                    log.warning("listing PodCliqueSets failed error=%s", err)
                    next_resync = time.monotonic() + poll_seconds
            retry: set[ObjectKey] = set()
            for namespace, name in sorted(pending):
                # Gated pods need no requeue: what lifts their gate (a bind, a new pod) arrives as a watch event.
                try:
                    self.reconcile(namespace, name)
                except ApiError as err:
                    log.warning("reconcile failed pcs=%s/%s error=%s", namespace, name, err)
                    retry.add((namespace, name))
                except Exception:  # one odd object must not stop the loop for every other PodCliqueSet
                    log.exception("reconcile crashed pcs=%s/%s", namespace, name)
                    retry.add((namespace, name))
            pending = retry | self.api.changes(poll_seconds)

    # --- one pass ------------------------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> Outcome:
        outcome = Outcome()
        raw = self.api.get_podcliqueset(namespace, name)
        if raw is None:
            self._delete_orphans(namespace, name, outcome)
            return outcome
        if (raw.get("metadata") or {}).get("deletionTimestamp"):
            return outcome  # the garbage collector removes what it owns
        try:
            user = PodCliqueSet.model_validate(raw)
        except ValidationError as err:
            errors = [FieldError(_path(e["loc"]), e["msg"]) for e in err.errors()]
            return self._rejected(raw, errors, outcome)
        pcs = with_defaults(user)
        pods = self._owned(pcs, "Pod")
        live_gangs = {g["metadata"]["name"]: g for g in self._owned(pcs, "PodGang")}
        binding = self._binding(pcs)
        accepted = (raw.get("status") or {}).get(SHAPE_STATUS_KEY)
        # Grove's create-only rules apply until we first accept the PodCliqueSet (or adopt objects made before).
        creating = accepted is None and not pods and not live_gangs
        errors = validate(pcs, binding=binding, creating=creating, scheduler_names=frozenset({self.scheduler_name}))
        if accepted is not None:
            errors += update_errors(accepted, pcs)
        if errors:
            return self._rejected(raw, errors, outcome)
        desired = desired_state(pcs, binding)
        try:
            pods_by_clique = self._converge_pods(pcs, desired, pods, outcome)
        except PodRefused as refused:  # the API server's own pod validation: as much the user's error as ours
            return self._rejected(raw, [refused.error], outcome)
        self._converge_services(pcs, outcome)
        syncer = GangSync(api=self.api, clock=self.clock, scheduler_name=self.scheduler_name)
        gangs, writes = syncer.sync(pcs, desired=desired, live=live_gangs, pods_by_clique=pods_by_clique)
        outcome.writes += writes
        lifted, outcome.gated = lift_gates(self.api, desired=desired, gangs=gangs, pods_by_clique=pods_by_clique)
        outcome.writes += lifted
        outcome.writes += self._reporter().accepted(
            raw, pcs=pcs, desired=desired, gangs=gangs, pods_by_clique=pods_by_clique, binding=binding
        )
        return outcome

    def _reporter(self) -> StatusReporter:
        return StatusReporter(api=self.api, clock=self.clock)

    def _rejected(self, raw: KubeObject, errors: list[FieldError], outcome: Outcome) -> Outcome:
        outcome.valid = False
        outcome.errors = [str(error) for error in errors]
        outcome.writes += self._reporter().rejected(raw, errors)
        return outcome

    def _owned(self, pcs: PodCliqueSet, kind: Any) -> list[KubeObject]:
        objects = self.api.list_owned(kind, namespace=pcs.metadata.namespace, part_of=pcs.metadata.name)
        return [o for o in objects if _controlled_by(o, pcs.metadata.uid)]

    def _binding(self, pcs: PodCliqueSet) -> ClusterTopologyBinding | None:
        name = topology_name(pcs)
        raw = self.api.get_topology_binding(name) if name else None
        try:
            return ClusterTopologyBinding.model_validate(raw) if raw else None
        except ValidationError:
            log.warning("unusable ClusterTopologyBinding name=%s", name)
            return None

    def _delete_orphans(self, namespace: str, name: str, outcome: Outcome) -> None:
        # The garbage collector does this on a real cluster; doing it too makes deletion prompt and GC-independent.
        for kind in ("Pod", "PodGang", "Service"):
            for obj in self.api.list_owned(kind, namespace=namespace, part_of=name):
                refs = obj["metadata"].get("ownerReferences") or []
                if any(r.get("kind") == "PodCliqueSet" and r.get("name") == name for r in refs):
                    self.api.delete(kind, namespace=namespace, name=obj["metadata"]["name"])
                    outcome.writes += 1

    def _converge_pods(
        self, pcs: PodCliqueSet, desired: Desired, pods: list[KubeObject], outcome: Outcome
    ) -> dict[str, list[KubeObject]]:
        cliques = desired.cliques()
        kept: dict[tuple[str, int], KubeObject] = {}
        # Live, bound, older-named pods first, so a duplicate index (never made by us) keeps the pod that runs.
        for pod in sorted(pods, key=lambda p: (is_terminating(p), not pod_is_bound(p), p["metadata"]["name"])):
            if _finished(pod) and not is_terminating(pod):
                # Evicted or exited: it holds its index but will never run again, so make room for a new one.
                self.api.delete("Pod", namespace=pcs.metadata.namespace, name=pod["metadata"]["name"])
                outcome.writes += 1
                continue
            labels = pod["metadata"].get("labels") or {}
            plan = cliques.get(labels.get(LABEL_PODCLIQUE, ""))
            index = _index(labels.get(LABEL_POD_INDEX))
            wanted = (
                plan is not None
                and index is not None
                and index < plan.replicas
                and labels.get(LABEL_PODGANG) == plan.gang
                and (plan.fqn, index) not in kept
            )
            if wanted and plan is not None and index is not None:
                kept[(plan.fqn, index)] = pod
            elif not is_terminating(pod):
                self.api.delete("Pod", namespace=pcs.metadata.namespace, name=pod["metadata"]["name"])
                outcome.writes += 1
        for plan in cliques.values():
            for index in range(plan.replicas):  # lowest free index first
                if (plan.fqn, index) not in kept:
                    kept[(plan.fqn, index)] = self._create_pod(pcs, plan, index, outcome)
        by_clique: dict[str, list[KubeObject]] = {}
        for (fqn, _), pod in sorted(kept.items()):
            by_clique.setdefault(fqn, []).append(pod)
        return by_clique

    def _create_pod(self, pcs: PodCliqueSet, plan: CliquePlan, index: int, outcome: Outcome) -> KubeObject:
        for attempt in range(_NAME_ATTEMPTS):
            name = pod_name(plan.fqn, self.rng)
            pod = pod_object(pcs=pcs, clique=plan, index=index, name=name, scheduler_name=self.scheduler_name)
            try:
                created = self.api.create(pod)
            except Conflict:
                if attempt == _NAME_ATTEMPTS - 1:
                    raise
                continue
            except ApiError as err:
                if err.status not in (400, 422):
                    raise
                index_of = [c.name for c in pcs.spec.template.cliques].index(plan.template.name)
                path = f"spec.template.cliques[{index_of}].spec.podSpec"
                raise PodRefused(FieldError(path, f"the API server refused its pod: {err}")) from err
            outcome.writes += 1
            log.info("created pod=%s/%s gang=%s index=%d", pcs.metadata.namespace, name, plan.gang, index)
            return created
        raise AssertionError("unreachable")

    def _converge_services(self, pcs: PodCliqueSet, outcome: Outcome) -> None:
        live = {s["metadata"]["name"] for s in self._owned(pcs, "Service")}
        wanted = {base_gang_name(pcs.metadata.name, r): r for r in range(max(pcs.spec.replicas, 0))}
        for name in sorted(live - wanted.keys()):
            self.api.delete("Service", namespace=pcs.metadata.namespace, name=name)
            outcome.writes += 1
        for name in sorted(wanted.keys() - live):
            self.api.create(service_object(pcs, wanted[name]))
            outcome.writes += 1


def _path(location: tuple[int | str, ...]) -> str:
    """A pydantic error location as a JSON path: ``spec.template.cliques[0].spec.replicas``."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def _controlled_by(obj: KubeObject, uid: str) -> bool:
    return any(r.get("controller") and r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or [])


def _finished(pod: KubeObject) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")


def _index(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
