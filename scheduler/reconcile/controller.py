"""The reconcile loop: read a PodCliqueSet and what exists for it, converge, report status.

One ``reconcile`` is level-triggered and idempotent: it derives everything from the objects it lists, never from
memory of an earlier pass, so a restart (or two passes in a row) neither duplicates nor loses a pod. Order inside
a pass, as Grove's controllers order theirs: PodCliqueScalingGroups and PodCliques (whose live ``replicas`` say how
many group replicas and pods there are), headless Services, HPAs and the startup-order identity (which the pods
name), the pods (gated), PodGangs listing them, the gates Grove would lift, then status — and gang termination, which
deletes what stayed broken too long for the next pass to recreate.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import ValidationError

from api.grove import ClusterTopologyBinding, PodCliqueSet
from scheduler.reconcile.api import ApiError, KubeObject, ObjectKey, OwnedKind, ReconcileApi
from scheduler.reconcile.clique_sync import CliqueSync
from scheduler.reconcile.defaults import with_defaults
from scheduler.reconcile.desired import LiveScale, desired_state
from scheduler.reconcile.fields import FieldError
from scheduler.reconcile.gang_sync import GangSync
from scheduler.reconcile.gates import lift_gates
from scheduler.reconcile.immutability import SHAPE_STATUS_KEY, update_errors
from scheduler.reconcile.limits import Limits
from scheduler.reconcile.owned import OwnedObjects, list_owned_objects
from scheduler.reconcile.pod_sync import PodRefused, PodSync
from scheduler.reconcile.reporting import StatusReporter
from scheduler.reconcile.status import Clock
from scheduler.reconcile.supporting import SupportingObjects
from scheduler.reconcile.topology_rules import topology_name
from scheduler.reconcile.upkeep import Upkeep
from scheduler.reconcile.validation import validate

__all__ = ["DEFAULT_INITC_IMAGE", "Outcome", "Reconciler"]

log = logging.getLogger(__name__)
DEFAULT_INITC_IMAGE = "grove-extender:0.1.0"  # the image this package ships in; `reconcile --initc-image` overrides


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Outcome:
    """What one pass did: writes issued, whether the spec was valid, pods still waiting for their gate, and in how
    many seconds the PodCliqueSet must be reconciled again even if nothing changes (a breached gang's
    ``terminationDelay`` running out, as Grove requeues after it)."""

    writes: int = 0
    valid: bool = True
    gated: int = 0
    errors: list[str] = field(default_factory=list)
    requeue_after: float | None = None


@dataclass
class Reconciler:
    api: ReconcileApi
    scheduler_name: str = "grove"
    rng: random.Random = field(default_factory=random.Random)
    clock: Clock = _utcnow
    initc_image: str = DEFAULT_INITC_IMAGE
    limits: Limits = field(default_factory=Limits)

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
        due: dict[ObjectKey, float] = {}  # reconciled again at this time even if nothing changes
        next_resync = time.monotonic()
        while not stop.is_set():
            now = time.monotonic()
            for key in [key for key, at in due.items() if at <= now]:
                pending.add(key)
                del due[key]
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
                    outcome = self.reconcile(namespace, name)
                    if outcome.requeue_after is not None:
                        due[(namespace, name)] = time.monotonic() + max(outcome.requeue_after, 0.0)
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
            outcome.writes += self._delete_orphans(namespace, name)
            return outcome
        if (raw.get("metadata") or {}).get("deletionTimestamp"):
            return outcome  # the garbage collector removes what it owns
        try:
            user = PodCliqueSet.model_validate(raw)
        except ValidationError as err:
            errors = [FieldError(_path(e["loc"]), e["msg"]) for e in err.errors()]
            return self._rejected(raw, errors, outcome)
        pcs = with_defaults(user)
        owned = list_owned_objects(self.api, pcs)
        binding = self._binding(pcs)
        accepted = (raw.get("status") or {}).get(SHAPE_STATUS_KEY)
        # Grove's create-only rules apply until we first accept the PodCliqueSet (or adopt objects made before).
        creating = accepted is None and not owned.pods and not owned.gangs
        errors = validate(
            pcs,
            binding=binding,
            creating=creating,
            scheduler_names=frozenset({self.scheduler_name}),
            limits=self.limits,
        )
        if accepted is not None:
            errors += update_errors(accepted, pcs)
        if errors:
            return self._rejected(raw, errors, outcome)
        desired = desired_state(pcs, binding, self._live_scale(owned))
        groups, podcliques, outcome.writes = CliqueSync(self.api).sync(
            pcs, desired=desired, live_groups=owned.groups, live_cliques=owned.cliques
        )
        # Before the pods: a pod naming a ServiceAccount that does not exist yet is refused by the API server.
        outcome.writes += SupportingObjects(self.api).sync(pcs, desired=desired, owned=owned)
        syncer = PodSync(self.api, rng=self.rng, scheduler_name=self.scheduler_name, initc_image=self.initc_image)
        try:
            pods_by_clique, writes = syncer.sync(pcs, cliques=desired.cliques(), podcliques=podcliques, pods=owned.pods)
        except PodRefused as refused:  # the API server's own pod validation: as much the user's error as ours
            return self._rejected(raw, [refused.error], outcome)
        outcome.writes += writes
        gangs, writes = GangSync(api=self.api, clock=self.clock, scheduler_name=self.scheduler_name).sync(
            pcs, desired=desired, live=owned.gangs, pods_by_clique=pods_by_clique
        )
        outcome.writes += writes
        lifted, outcome.gated = lift_gates(self.api, desired=desired, gangs=gangs, pods_by_clique=pods_by_clique)
        outcome.writes += lifted
        upkeep = Upkeep(api=self.api, clock=self.clock)
        writes, outcome.requeue_after = upkeep.run(
            pcs, desired=desired, groups=groups, podcliques=podcliques, pods=pods_by_clique
        )
        outcome.writes += writes
        outcome.writes += self._reporter().accepted(
            raw, pcs=pcs, desired=desired, gangs=gangs, pods_by_clique=pods_by_clique, binding=binding
        )
        return outcome

    def _live_scale(self, owned: OwnedObjects) -> LiveScale:
        """What ``kubectl scale`` or an HPA set on the live objects; a count beyond the limits is ignored (the
        template's applies) and said so, rather than creating a billion pods from one typo."""

        def counts(objects: dict[str, KubeObject], kind: str) -> dict[str, int]:
            found: dict[str, int] = {}
            for name, obj in objects.items():
                value = (obj.get("spec") or {}).get("replicas")
                if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= self.limits.replicas:
                    found[name] = value
                else:
                    log.warning(
                        "ignoring replicas kind=%s name=%s replicas=%r limit=%d",
                        kind,
                        name,
                        value,
                        self.limits.replicas,
                    )
            return found

        return LiveScale(
            groups=counts(owned.groups, "PodCliqueScalingGroup"), cliques=counts(owned.cliques, "PodClique")
        )

    def _reporter(self) -> StatusReporter:
        return StatusReporter(api=self.api, clock=self.clock)

    def _rejected(self, raw: KubeObject, errors: list[FieldError], outcome: Outcome) -> Outcome:
        outcome.valid = False
        outcome.errors = [str(error) for error in errors]
        outcome.writes += self._reporter().rejected(raw, errors)
        return outcome

    def _binding(self, pcs: PodCliqueSet) -> ClusterTopologyBinding | None:
        name = topology_name(pcs)
        raw = self.api.get_topology_binding(name) if name else None
        try:
            return ClusterTopologyBinding.model_validate(raw) if raw else None
        except ValidationError:
            log.warning("unusable ClusterTopologyBinding name=%s", name)
            return None

    def _delete_orphans(self, namespace: str, name: str) -> int:
        """The garbage collector does this on a real cluster; doing it too makes deletion prompt and
        GC-independent. Objects the PodCliqueSet owned directly go; what they own goes with them."""
        writes = 0
        kinds: tuple[OwnedKind, ...] = (
            "PodCliqueScalingGroup",
            "PodClique",
            "Pod",
            "PodGang",
            "Service",
            "HorizontalPodAutoscaler",
            "RoleBinding",
            "Role",
            "ServiceAccount",
        )
        for kind in kinds:
            for obj in self.api.list_owned(kind, namespace=namespace, part_of=name):
                refs = obj["metadata"].get("ownerReferences") or []
                if any(r.get("kind") == "PodCliqueSet" and r.get("name") == name for r in refs):
                    self.api.delete(kind, namespace=namespace, name=obj["metadata"]["name"])
                    writes += 1
        return writes


def _path(location: tuple[int | str, ...]) -> str:
    """A pydantic error location as a JSON path: ``spec.template.cliques[0].spec.replicas``."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text
