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
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from api.grove import GANG_GATE, ClusterTopologyBinding, PodCliqueSet
from scheduler.reconcile.api import ApiError, Conflict, KubeObject, ObjectKey, ReconcileApi
from scheduler.reconcile.defaults import with_defaults
from scheduler.reconcile.desired import CliquePlan, Desired, desired_state
from scheduler.reconcile.fields import FieldError
from scheduler.reconcile.gangs import is_terminating, normalised_spec, podgang_object, service_object
from scheduler.reconcile.names import LABEL_POD_INDEX, LABEL_PODCLIQUE, LABEL_PODGANG, base_gang_name
from scheduler.reconcile.pods import pod_name, pod_object
from scheduler.reconcile.status import (
    CONDITION_SPEC_VALID,
    Clock,
    base_gang_scheduled,
    condition,
    gang_initialized,
    merge_conditions,
    pcs_status,
    pod_is_bound,
)
from scheduler.reconcile.topology_rules import levels_condition, topology_name
from scheduler.reconcile.validation import validate

__all__ = ["Outcome", "Reconciler"]

log = logging.getLogger(__name__)
_NAME_ATTEMPTS = 5  # random-suffix collisions are ~1 in 14 million; five tries is plenty


def _utcnow() -> datetime:
    return datetime.now(UTC)


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
        pending = self.all_keys()
        next_resync = time.monotonic() + resync_seconds
        while not stop.is_set():
            retry: set[ObjectKey] = set()
            for namespace, name in sorted(pending):
                try:
                    outcome = self.reconcile(namespace, name)
                except ApiError as err:
                    log.warning("reconcile failed pcs=%s/%s error=%s", namespace, name, err)
                    retry.add((namespace, name))
                    continue
                if outcome.gated:  # Grove requeues while gated pods remain
                    retry.add((namespace, name))
            pending = retry | self.api.changes(poll_seconds)
            if time.monotonic() >= next_resync:
                pending |= self.all_keys()
                next_resync = time.monotonic() + resync_seconds

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
            self._reject(raw, errors, outcome)
            return outcome
        pcs = with_defaults(user)
        pods = self._owned(pcs, "Pod")
        live_gangs = {g["metadata"]["name"]: g for g in self._owned(pcs, "PodGang")}
        binding = self._binding(pcs)
        creating = not pods and not live_gangs
        errors = validate(pcs, binding=binding, creating=creating, scheduler_names=frozenset({self.scheduler_name}))
        if errors:
            self._reject(raw, errors, outcome)
            return outcome
        desired = desired_state(pcs, binding)
        pods_by_clique = self._converge_pods(pcs, desired, pods, outcome)
        self._converge_services(pcs, outcome)
        gangs = self._converge_gangs(pcs, desired, live_gangs, pods_by_clique, outcome)
        self._lift_gates(desired, gangs, pods_by_clique, outcome)
        self._write_status(raw, pcs, desired, gangs, pods_by_clique, binding, outcome)
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
        # Bound and older-named pods first, so a duplicate index (never made by us) keeps the pod that runs.
        for pod in sorted(pods, key=lambda p: (not pod_is_bound(p), p["metadata"]["name"])):
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

    def _converge_gangs(
        self,
        pcs: PodCliqueSet,
        desired: Desired,
        live: dict[str, KubeObject],
        pods_by_clique: Mapping[str, list[KubeObject]],
        outcome: Outcome,
    ) -> dict[str, KubeObject]:
        namespace = pcs.metadata.namespace
        wanted = {gang.name for gang in desired.gangs}
        for name in sorted(live.keys() - wanted):
            self.api.delete("PodGang", namespace=namespace, name=name)
            outcome.writes += 1
        topology = topology_name(pcs) if desired.topology_translated else None
        result: dict[str, KubeObject] = {}
        for gang in desired.gangs:
            obj = podgang_object(
                pcs=pcs,
                gang=gang,
                pods_by_clique=pods_by_clique,
                scheduler_name=self.scheduler_name,
                topology_name=topology,
            )
            current = live.get(gang.name)
            if current is None:
                current = self.api.create(obj)
                # As Grove: a new gang is Pending and not yet Initialized.
                pending = condition("Initialized", "False", reason="PodGangPodsCreationPending", message="")
                current = self._gang_status(current, {"phase": "Pending"}, pending)
                outcome.writes += 2
            elif _gang_differs(current, obj):
                current["spec"] = obj["spec"]
                current["metadata"]["labels"] = obj["metadata"]["labels"]
                current["metadata"]["annotations"] = obj["metadata"].get("annotations", {})
                current = self.api.replace_podgang(current)
                outcome.writes += 1
            initialized = gang_initialized(gang, current)
            wanted_condition = (
                condition("Initialized", "True", reason="PodGangPodsCreated", message="")
                if initialized
                else condition("Initialized", "False", reason="PodGangPodsCreationPending", message="")
            )
            if _condition_status(current, "Initialized") != wanted_condition["status"]:
                current = self._gang_status(current, {}, wanted_condition)
                outcome.writes += 1
            result[gang.name] = current
        return result

    def _gang_status(self, gang: KubeObject, fields: KubeObject, wanted: KubeObject) -> KubeObject:
        status = dict(gang.get("status") or {})
        now = self.clock().isoformat()
        patch = {**fields, "conditions": merge_conditions(status.get("conditions") or [], [wanted], now=now)}
        if "phase" not in status and "phase" not in patch:
            patch["phase"] = "Pending"  # phase is required in PodGang status
        meta = gang["metadata"]
        return self.api.patch_podgang_status(
            meta["namespace"], meta["name"], status=patch, resource_version=meta["resourceVersion"]
        )

    def _lift_gates(
        self,
        desired: Desired,
        gangs: Mapping[str, KubeObject],
        pods_by_clique: Mapping[str, list[KubeObject]],
        outcome: Outcome,
    ) -> None:
        cliques = desired.cliques()
        scheduled: dict[str, bool] = {}
        for gang in desired.gangs:
            if gang.is_base:
                scheduled[gang.name] = base_gang_scheduled(gang, pods_by_clique)
        for fqn, pods in pods_by_clique.items():
            plan = cliques[fqn]
            listed = _listed(gangs.get(plan.gang), fqn)
            for pod in pods:
                gates = pod["spec"].get("schedulingGates") or []
                if not any(g.get("name") == GANG_GATE for g in gates):
                    continue
                # Grove: listed in its gang, and either a base-gang pod or its base gang is scheduled.
                base_ok = plan.base_gang is None or scheduled.get(plan.base_gang, False)
                if pod["metadata"]["name"] in listed and base_ok:
                    meta = pod["metadata"]
                    remaining = [g for g in gates if g.get("name") != GANG_GATE]
                    self.api.set_pod_scheduling_gates(
                        meta["namespace"], meta["name"], gates=remaining, resource_version=meta["resourceVersion"]
                    )
                    outcome.writes += 1
                else:
                    outcome.gated += 1

    def _write_status(
        self,
        raw: KubeObject,
        pcs: PodCliqueSet,
        desired: Desired,
        gangs: Mapping[str, KubeObject],
        pods_by_clique: Mapping[str, list[KubeObject]],
        binding: ClusterTopologyBinding | None,
        outcome: Outcome,
    ) -> None:
        status = pcs_status(
            generation=pcs.metadata.generation,
            replicas=max(pcs.spec.replicas, 0),
            desired=desired,
            podgangs=gangs,
            pods_by_clique=pods_by_clique,
        )
        wanted = [condition(CONDITION_SPEC_VALID, "True", reason="Valid", message="")]
        if levels := levels_condition(pcs, binding):
            wanted.append(condition("TopologyLevelsUnavailable", levels[0], reason=levels[1], message=levels[2]))
        self._patch_pcs_status(raw, status, wanted, outcome)

    def _reject(self, raw: KubeObject, errors: list[FieldError], outcome: Outcome) -> None:
        outcome.valid = False
        outcome.errors = [str(e) for e in errors]
        message = "; ".join(outcome.errors)
        wanted = [condition(CONDITION_SPEC_VALID, "False", reason="ValidationFailed", message=message)]
        meta = raw.get("metadata") or {}
        previous = [
            c for c in (raw.get("status") or {}).get("conditions") or [] if c.get("type") == CONDITION_SPEC_VALID
        ]
        if not previous or previous[0].get("message") != message:  # one event per distinct verdict, not one per pass
            involved = {
                "apiVersion": raw.get("apiVersion", "grove.io/v1alpha1"),
                "kind": "PodCliqueSet",
                "namespace": meta.get("namespace", ""),
                "name": meta.get("name", ""),
                "uid": meta.get("uid", ""),
            }
            self.api.record_event(involved=involved, reason="ValidationFailed", message=message, type="Warning")
            log.warning("invalid pcs=%s/%s errors=%s", meta.get("namespace"), meta.get("name"), message)
        generation = meta.get("generation")
        self._patch_pcs_status(raw, {"observedGeneration": generation} if generation else {}, wanted, outcome)

    def _patch_pcs_status(
        self, raw: KubeObject, fields: KubeObject, wanted: list[KubeObject], outcome: Outcome
    ) -> None:
        current = raw.get("status") or {}
        conditions = merge_conditions(current.get("conditions") or [], wanted, now=self.clock().isoformat())
        status = {**fields, "conditions": conditions}
        if all(current.get(key) == value for key, value in status.items()):
            return
        meta = raw["metadata"]
        self.api.patch_podcliqueset_status(meta.get("namespace", ""), meta["name"], status=status)
        outcome.writes += 1


def _path(location: tuple[int | str, ...]) -> str:
    """A pydantic error location as a JSON path: ``spec.template.cliques[0].spec.replicas``."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def _controlled_by(obj: KubeObject, uid: str) -> bool:
    return any(r.get("controller") and r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or [])


def _index(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def _listed(gang: KubeObject | None, fqn: str) -> set[str]:
    if gang is None:
        return set()
    groups = [g for g in gang["spec"].get("podgroups") or [] if g.get("name") == fqn]
    return {ref["name"] for g in groups for ref in g.get("podReferences") or []}


def _condition_status(obj: KubeObject, type_: str) -> str | None:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item.get("type") == type_:
            return str(item.get("status"))
    return None


def _gang_differs(live: KubeObject, wanted: KubeObject) -> bool:
    live_meta, wanted_meta = live["metadata"], wanted["metadata"]
    return (
        normalised_spec(live["spec"]) != normalised_spec(wanted["spec"])
        or (live_meta.get("labels") or {}) != wanted_meta["labels"]
        or (live_meta.get("annotations") or {}) != wanted_meta.get("annotations", {})
    )
