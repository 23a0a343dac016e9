"""The reconcile loop: read a PodCliqueSet and what exists for it, hold it to the rules, work out the desired
state, run the components, report status.

One ``reconcile`` is level-triggered and idempotent: it derives everything from the objects it lists, never from
memory of an earlier pass, so a restart (or two passes in a row) neither duplicates nor loses a pod. A pass is, in
order: the PodCliqueSet and what exists for it (``components.observed``); Grove's defaults and rules (``rules``),
which refuse it whole or let it through; the desired state (``desired``); every component in the registry's
converge order (``components.registry``); PodClique and scaling-group status (``status.writer``); the components
that act on that status (gang termination, which deletes what stayed broken too long for the next pass to
recreate); then the PodCliqueSet's own status (``status.reporting``).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import ValidationError

from api.grove import ClusterTopologyBinding, PodCliqueSet
from scheduler.reconcile.client import ApiError, KubeObject, ObjectKey, ReconcileApi
from scheduler.reconcile.components.component import Component, ComponentKind, PassState, Refused
from scheduler.reconcile.components.observed import Observed, live_scale, observe
from scheduler.reconcile.components.registry import AFTER_STATUS, CONVERGE, TEARDOWN, pcs_components
from scheduler.reconcile.desired.state import desired_state
from scheduler.reconcile.desired.template_hash import PodCliqueSetHashes, pcs_hashes
from scheduler.reconcile.fanout import Fanout
from scheduler.reconcile.rules.defaults import with_defaults
from scheduler.reconcile.rules.features import Features
from scheduler.reconcile.rules.fields import FieldError
from scheduler.reconcile.rules.immutability import SHAPE_STATUS_KEY, update_errors
from scheduler.reconcile.rules.limits import Limits
from scheduler.reconcile.rules.topology import topology_name
from scheduler.reconcile.rules.validation import validate
from scheduler.reconcile.status.conditions import Clock, stamp
from scheduler.reconcile.status.reporting import PodCliqueSetStatusReporter
from scheduler.reconcile.status.rollout import Rollout
from scheduler.reconcile.status.writer import StatusWriter, write_clique_statuses
from scheduler.reconcile.workqueue import WorkQueue

__all__ = ["DEFAULT_INITC_IMAGE", "PassOutcome", "Reconciler"]

log = logging.getLogger(__name__)
DEFAULT_INITC_IMAGE = "grove-extender:0.1.0"  # the image this package ships in; `reconcile --initc-image` overrides
HASHES_KEPT = 10_000  # PodCliqueSets whose template hashes are kept between passes
STOP_WAIT_SECONDS = 30.0  # how long stopping waits for a worker's pass in flight: a few requests' timeouts


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class PassOutcome:
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
    features: Features = field(default_factory=Features)
    rng: random.Random = field(default_factory=random.Random)
    clock: Clock = _utcnow
    initc_image: str = DEFAULT_INITC_IMAGE
    limits: Limits = field(default_factory=Limits)
    fanout: Fanout = field(default_factory=Fanout)  # a pass's pod creates and gate lifts sent together
    components: dict[ComponentKind, Component] = field(init=False, repr=False)
    # A PodCliqueSet's template hashes by (uid, generation): the spec they are made from changes only with the
    # generation, and replaying Go's dump of every template on every pass showed in the reconciler's profile
    # (bench_e2e --grove-flow --profile; figures in docs/bench_e2e.md).
    _hashes: dict[tuple[str, int], PodCliqueSetHashes] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.components = pcs_components(
            api=self.api,
            clock=self.clock,
            rng=self.rng,
            scheduler_name=self.scheduler_name,
            initc_image=self.initc_image,
            features=self.features,
            fanout=self.fanout,
        )

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

    def run(
        self,
        *,
        stop: threading.Event,
        resync_seconds: float = 60.0,
        poll_seconds: float = 1.0,
        on_tick: Callable[[], None] | None = None,
        workers: int = 1,
    ) -> None:
        """Serve until ``stop``: reconcile what changed, retry what failed, resync everything periodically.
        ``workers`` PodCliqueSets are reconciled at once, never one by two workers (``workqueue.WorkQueue``).
        ``on_tick`` runs after each PodCliqueSet reconciled and each wait for changes while no pass runs (the
        liveness probe's heartbeat: a pass that never ends stops it)."""
        tick = on_tick or (lambda: None)
        queue = WorkQueue()
        threads = [
            threading.Thread(
                target=self._work, args=(queue, stop, poll_seconds, tick), name=f"reconcile-{i}", daemon=True
            )
            for i in range(workers)
        ]
        for thread in threads:
            thread.start()
        next_resync = time.monotonic()
        try:
            while not stop.is_set():
                if time.monotonic() >= next_resync:
                    try:
                        for key in self.all_keys():
                            queue.add(key)
                        next_resync = time.monotonic() + resync_seconds
                    except ApiError as err:  # API server unreachable or refusing: try again shortly
                        log.warning("listing PodCliqueSets failed error=%s", err)
                        next_resync = time.monotonic() + poll_seconds
                for key in self.api.changes(poll_seconds):
                    queue.add(key)
                if not queue.held():  # while a pass runs, only its worker says the loop moves: a stuck one shows
                    tick()
        finally:
            queue.close()
            for thread in threads:
                thread.join(timeout=STOP_WAIT_SECONDS)

    def _work(self, queue: WorkQueue, stop: threading.Event, poll_seconds: float, tick: Callable[[], None]) -> None:
        while not stop.is_set():
            key = queue.get(timeout=poll_seconds)
            if key is None:
                continue
            namespace, name = key
            try:
                # Gated pods need no requeue: what lifts their gate (a bind, a new pod) arrives as a watch event.
                outcome = self.reconcile(namespace, name)
                if outcome.requeue_after is not None:
                    queue.add_after(key, max(outcome.requeue_after, 0.0))
            except ApiError as err:
                log.warning("reconcile failed pcs=%s/%s error=%s", namespace, name, err)
                queue.add_after(key, poll_seconds)
            except Exception:  # one odd object must not stop the loop for every other PodCliqueSet
                log.exception("reconcile crashed pcs=%s/%s", namespace, name)
                queue.add_after(key, poll_seconds)
            finally:
                queue.done(key)
            tick()

    # --- one pass ------------------------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> PassOutcome:
        outcome = PassOutcome()
        raw = self.api.get_podcliqueset(namespace, name)
        if raw is None:
            outcome.writes += self._delete_orphans(namespace, name)
            return outcome
        if (raw.get("metadata") or {}).get("deletionTimestamp"):
            # Going (a foreground deletion, or another finalizer holds it): tear down what it owns now, releasing
            # the finalizers the garbage collector would otherwise wait on.
            outcome.writes += self._delete_orphans(namespace, name)
            return outcome
        try:
            user = PodCliqueSet.model_validate(raw)
        except ValidationError as err:
            errors = [FieldError(_path(e["loc"]), e["msg"]) for e in err.errors()]
            return self._rejected(raw, errors, outcome)
        pcs = with_defaults(user)
        observed = observe(self.api, pcs)
        binding = self._binding(pcs)
        if errors := self._broken_rules(raw, pcs, binding=binding, observed=observed):
            return self._rejected(raw, errors, outcome)
        desired = desired_state(pcs, binding, live_scale(observed, self.limits))
        hashes = self._template_hashes(pcs)
        rollout = Rollout.observe(
            pcs, generation=hashes.generation, template_hashes=hashes.templates, now=stamp(self.clock())
        )
        state = PassState(pcs=pcs, desired=desired, observed=observed, rollout=rollout)
        try:
            for component in self._in_order(CONVERGE):
                outcome.writes += component.sync(state)
        except Refused as refused:  # a pod the API server refused, a template nowhere: the user's to mend
            return self._rejected(raw, [refused.error], outcome)
        outcome.gated = state.gated
        writer = StatusWriter(api=self.api, clock=self.clock)
        outcome.writes += write_clique_statuses(
            writer,
            groups=state.groups,
            podcliques=state.podcliques,
            pods=state.pods_by_clique,
            plans=desired.cliques(),
            rollout=rollout,
        )
        for component in self._in_order(AFTER_STATUS):
            outcome.writes += component.sync(state)
        outcome.requeue_after = state.requeue_after
        outcome.writes += self._reporter().accepted(
            raw,
            pcs=pcs,
            desired=desired,
            gangs=state.gangs,
            pods_by_clique=state.pods_by_clique,
            podcliques=state.podcliques,
            groups=state.groups,
            rollout=rollout,
            binding=binding,
        )
        return outcome

    def _broken_rules(
        self, raw: KubeObject, pcs: PodCliqueSet, *, binding: ClusterTopologyBinding | None, observed: Observed
    ) -> list[FieldError]:
        accepted = (raw.get("status") or {}).get(SHAPE_STATUS_KEY)
        # Grove's create-only rules apply until we first accept the PodCliqueSet (or adopt objects made before).
        creating = accepted is None and not observed.pods and not observed.gangs
        errors = validate(
            pcs,
            binding=binding,
            creating=creating,
            scheduler_names=frozenset({self.scheduler_name}),
            default_scheduler=self.features.default_scheduler or self.scheduler_name,
            mnnvl=self.features.mnnvl,
            limits=self.limits,
        )
        if accepted is not None:
            errors += update_errors(accepted, pcs)
        return errors

    def _template_hashes(self, pcs: PodCliqueSet) -> PodCliqueSetHashes:
        uid, generation = pcs.metadata.uid, pcs.metadata.generation
        if not uid or not generation:
            return pcs_hashes(pcs)
        found = self._hashes.get((uid, generation))
        if found is None:
            if len(self._hashes) >= HASHES_KEPT:
                self._hashes.clear()  # deleted and outdated PodCliqueSets' entries go; the live ones come back
            found = self._hashes[(uid, generation)] = pcs_hashes(pcs)
        return found

    def _in_order(self, kinds: tuple[ComponentKind, ...]) -> list[Component]:
        return [self.components[kind] for kind in kinds if kind in self.components]

    def _reporter(self) -> PodCliqueSetStatusReporter:
        return PodCliqueSetStatusReporter(api=self.api, clock=self.clock)

    def _rejected(self, raw: KubeObject, errors: list[FieldError], outcome: PassOutcome) -> PassOutcome:
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
        """What a deleted PodCliqueSet owned directly; what those owned goes with them."""
        return sum(component.delete(namespace=namespace, pcs=name) for component in self._in_order(TEARDOWN))


def _path(location: tuple[int | str, ...]) -> str:
    """A pydantic error location as a JSON path: ``spec.template.cliques[0].spec.replicas``."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text
