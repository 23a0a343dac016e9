"""``Nominator``: every planned pod's ``status.nominatedNodeName`` set to the node its gang's plan gives it.

kube-scheduler tries a pod's nominated node alone before it runs its filter plugins over every node
(``evaluateNominatedNode``), and then calls the extender with that one name. The ``grove`` profile must otherwise
score all nodes (``percentageOfNodesToScore: 100``) so that the planned node is always among the candidates: on
1,008 nodes those filters were most of kube-scheduler's CPU per pod (``bench_e2e --real``). Its nominator also
counts a nominated pod on its node when it filters other pods, so kube-scheduler's own view holds our reservations.

The rules:

- a member is nominated when a plan places it on a node it is not nominated to, unless its bind call has arrived
  already (kube-scheduler is done with it), and cleared when it loses its plan without a new one (the gang waits,
  is infeasible or expired, the PodGang went away) while it is still pending;
- a nomination another component wrote (kube-scheduler's own, after a preemption of its own) is never overwritten
  (KEP-5278: the component that sets ``nominatedNodeName`` owns it): a pod whose nomination we did not write is left
  alone, and every write is conditional on the field still reading what we last wrote (or, for a pod we never
  nominated, what the store shows), so one written meanwhile makes ours fail rather than replace it. After a
  restart or a change of leader, nominations the previous leader wrote count as another component's;
- at most one write per pod is in flight; a newer wish waits for it and goes next, so writes never land out of order;
- a failed nomination is not retried: it is a hint, and without it kube-scheduler scans every node as before.
  kube-scheduler clears a nomination itself when an attempt fails with an ``Error``; that pod goes the long way.
  A clear that failed without an answer that settles it (a 5xx, a timeout) is retried on the next tick until the API
  shows it: a nomination left behind makes kube-scheduler hold the pod's room on that node for other pods. Its
  precondition is the node we had written, so a retry of a clear that did land is refused (422), which settles it;
- only the leader writes: a replica that stops leading sends nothing more (not even a wish queued behind a write
  in flight) and forgets what it wrote. A replica that starts leading (after a
  failover, or a restart) adopts every nomination of ours the store shows on a pending pod: whichever replica wrote
  it, the API server recorded our field manager as its owner (``scheduler.kube.nominations.nominated_by_us``). Each
  adopted gang is synced once its plan has been tried: the nominations its plan backs stay, the rest are cleared,
  so none outlives the plan that made it;
- a bound pod is forgotten: the API server clears ``nominatedNodeName`` when it binds a pod.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace

from api.core import Pod
from scheduler.extender.cluster_writer import ClusterWriter, Nomination
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangRef, gang_ref_of
from scheduler.extender.coordinator.metrics import CoordinatorMetrics
from scheduler.extender.state.store import ClusterStore
from scheduler.kube.errors import WriteError
from scheduler.kube.nominations import NotSent, Wanted, nominated_by_us

__all__ = ["Nominator"]

log = logging.getLogger(__name__)
# Answers that settle a write's fate: the pod is gone or another (404, 409: the UID test), or the field no longer
# reads what the write assumed (422: the value test): nothing of ours is left to undo.
_SETTLED = frozenset({404, 409, 422})


class Nominator:
    def __init__(
        self,
        *,
        store: ClusterStore,
        table: GangTable,
        writer: ClusterWriter,
        metrics: CoordinatorMetrics,
        may_write: Callable[[], bool],
    ) -> None:
        self._store = store
        self._table = table
        self._writer = writer
        self._metrics = metrics
        self._may_write = may_write
        self._lock = threading.Lock()
        self._shown: dict[str, str] = {}  # pod → what its nominatedNodeName says, as far as we wrote it
        self._in_flight: set[str] = set()
        self._next: dict[str, Nomination] = {}  # pod → the wish that waits for its write in flight
        self._members: dict[str, set[str]] = {}  # gang → pods we wrote or are writing a nomination for
        self._refs: dict[str, GangRef] = {}  # gang key → its ref, for the gangs in ``_members``
        self._failed: dict[str, GangRef] = {}  # gangs with a clear to send again

    def sync(self, ref: GangRef) -> None:
        """Bring the gang's nominations in line with its plan (the background worker calls this)."""
        if not self._may_write():
            with self._lock:
                self._refs.pop(ref.key, None)
                self._failed.pop(ref.key, None)
                for pod in self._members.pop(ref.key, set()):
                    self._shown.pop(pod, None)
                    self._next.pop(pod, None)
            return
        basis = self._table.nomination_basis(ref.key)
        planned = basis.plan
        send: list[Nomination] = []
        with self._lock:
            self._refs[ref.key] = ref
            members = self._members.setdefault(ref.key, set())
            for pod in sorted(members - planned.keys()):
                # Bound by our release before the watch shows it: the API server clears the nomination itself.
                wish = None if pod in basis.bound else self._pending(pod, "")
                if wish is not None and (self._shown.get(pod) or pod in self._in_flight):
                    send.extend(self._want(wish))  # clear it
                elif pod not in self._in_flight:  # cleared, bound or gone: nothing left to undo
                    members.discard(pod)
                    self._shown.pop(pod, None)
                    self._next.pop(pod, None)
            for pod, node in planned.items():
                if pod in basis.ready:
                    continue  # kube-scheduler has assumed it on its node and sent its bind: too late to help
                wish = self._pending(pod, node)
                if wish is not None and (self._shown.get(pod) != node or pod in self._next):
                    members.add(pod)
                    send.extend(self._want(wish))
            if not members:
                del self._members[ref.key]
                self._refs.pop(ref.key, None)
        if send:
            # In the order kube-scheduler will pop them: a large gang's nominations take a while to write, and a pod
            # popped before its own lands costs kube-scheduler a scan of every node.
            order = {key: rank for rank, key in enumerate(self._store.in_queue_order(n.key for n in send))}
            send.sort(key=lambda n: order[n.key])
            self._writer.nominate(send, self._answered, wanted=self._still_wanted(ref.key))

    def adopt(self, pods: Iterable[Pod]) -> list[GangRef]:
        """Take on the nominations of ours among ``pods`` that are still pending and offered to us, as if written
        here; the gangs to sync, once their plans have been tried, so that those no plan backs are cleared."""
        adopted: dict[str, GangRef] = {}
        with self._lock:
            for pod in pods:
                if pod.spec.nodeName or not nominated_by_us(pod) or not self._store.offered(pod):
                    continue
                key = f"{pod.metadata.namespace}/{pod.metadata.name}"
                if key in self._shown or key in self._in_flight:
                    continue
                ref = gang_ref_of(pod)
                self._shown[key] = pod.status.nominatedNodeName
                self._members.setdefault(ref.key, set()).add(key)
                self._refs[ref.key] = adopted[ref.key] = ref
        if adopted:
            log.info("adopted the nominations a previous leader wrote gangs=%d", len(adopted))
        return list(adopted.values())

    def retry_failed(self) -> None:
        """Send again the clears that failed unsettled (the background worker calls this once per tick)."""
        with self._lock:
            failed, self._failed = self._failed, {}
        for ref in failed.values():
            self.sync(ref)

    def nominated(self) -> dict[str, str]:
        """Pod → node of the nominations written and not cleared (``/debug``, tests)."""
        with self._lock:
            return {pod: node for pod, node in self._shown.items() if node}

    def _pending(self, pod: str, node: str) -> Nomination | None:
        """The nomination of ``node`` for ``pod`` if the pod still waits for a node and no other component nominated
        it (KEP-5278: whoever sets a pod's nominatedNodeName owns it), else None. Only pods kube-scheduler offers us
        (their ``schedulerName``): a gang may list a pod another scheduler places, and its nomination is not ours.
        Not a pod still gated (by Grove's gate: no other is planned): Grove lifts it moments later and kube-scheduler
        pops the pod at once, so the nomination would land about when it no longer helps, and in Grove's flow the
        write cost the API server more than it saved kube-scheduler (bench_e2e --grove-flow, docs/bench_e2e.md)."""
        stored = self._store.pod(pod)
        if stored is None or stored.spec.nodeName or not stored.metadata.uid or not self._store.offered(stored):
            return None
        if stored.gated and node:
            return None
        theirs = stored.status.nominatedNodeName
        if node and theirs and theirs != node and theirs != self._shown.get(pod) and pod not in self._in_flight:
            return None
        return Nomination(
            stored.metadata.namespace, stored.metadata.name, stored.metadata.uid, node, previous=self._previous(pod)
        )

    def _previous(self, pod: str) -> str:
        """Under the lock: what the pod's nominatedNodeName reads before our next write: what we last wrote, else
        what the store shows ("" unset)."""
        if pod in self._shown:
            return self._shown[pod]
        stored = self._store.pod(pod)
        return (stored.status.nominatedNodeName or "") if stored is not None else ""

    def _want(self, wish: Nomination) -> list[Nomination]:
        """Under the lock: what to send now for ``wish`` (nothing while the pod's last write is in flight)."""
        if wish.key in self._in_flight:
            self._next[wish.key] = wish
            return []
        self._in_flight.add(wish.key)
        return [wish]

    def _still_wanted(self, gang: str) -> Wanted:
        """Whether a member's nomination is worth its write when its turn to be sent comes: not once its bind call
        has arrived. A large gang's nominations take a while to go out, and kube-scheduler pops some of its pods
        meanwhile; the write would only be cleared by kube-scheduler's own status write after the bind's answer."""

        def wanted(nomination: Nomination) -> bool:
            if not nomination.node:
                return True  # a clear always goes: a nomination left behind holds room on its node
            member = self._table.member(gang, nomination.key)
            return member is None or member.ready is None

        return wanted

    def _answered(self, nomination: Nomination, error: WriteError | None) -> None:
        pod = nomination.key
        with self._lock:
            self._in_flight.discard(pod)
            if error is None:
                self._shown[pod] = nomination.node
            elif not nomination.node and error.status not in _SETTLED and nomination.previous:
                # Most likely not applied: the field still names our node. If it was, the retry's precondition
                # (that node) is refused, which settles it.
                self._shown[pod] = nomination.previous
                gang = next((key for key, pods in self._members.items() if pod in pods), None)
                if gang is not None and gang in self._refs:
                    self._failed[gang] = self._refs[gang]
            else:
                self._shown.pop(pod, None)  # unknown: a later plan writes it again
            after = self._next.pop(pod, None)
            if after is not None and not self._may_write():
                after = None  # deposed meanwhile: the next leader adopts what the API shows and writes its own
            if after is not None and (error is not None or after.node != nomination.node):
                self._in_flight.add(pod)
                after = replace(after, previous=self._previous(pod))  # what the write just answered left
            else:
                after = None
        self._metrics.nominations.labels(
            "written" if error is None else "not_sent" if isinstance(error, NotSent) else "failed"
        ).inc()
        if error is not None:  # the writer has logged why
            log.debug("nomination not written pod=%s node=%r", pod, nomination.node)
        if after is not None:
            self._writer.nominate([after], self._answered)
