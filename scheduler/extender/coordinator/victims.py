"""What may make way for a gang of higher priority, gathered from the cluster state and the gang table.

Two kinds of candidates, both strictly below the preemptor's priority (``translation.priority``):

- **reservations** of gangs that have not started binding (nothing ready, bound or releasing): they *yield*, and
  their gang goes back to the queue; always allowed, even for a ``preemptionPolicy: Never`` gang (a reservation is
  a place in the queue, not a running workload);
- **running pods** (bound, not finished, not already being deleted), only when the preemptor may preempt: our gangs'
  members, with their PodGang's ``minReplicas`` (the model evicts a gang whole or only above its minimum), a pod of no
  gang and another scheduler's pod as a victim of its own, evicted whole.

Pods already being deleted are no candidates: their capacity is *coming free* (``terminating``), and a plan that
counts on it waits for them like for its victims. ``excluded`` pods (refused by a PodDisruptionBudget, or that never
terminated) are left out entirely for a while, capacity and all.

A victim gang with no member on a node the preemptor could use is left out: evicting it could not help. Every
PodDisruptionBudget over our victims comes along (``budgets``): the model never chooses more of its pods than it
allows now.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from api.core import Pod
from placement.preemption import Budget, Victim, VictimGang
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangRef, gang_ref_of
from scheduler.extender.state.store import ClusterStore
from scheduler.extender.translation.priority import gang_priority, pod_priority
from scheduler.kube.foreign import ForeignPod

__all__ = ["Candidates", "VictimPod", "gather", "priority_of"]


@dataclass(frozen=True)
class VictimPod:
    """What evicting a running victim needs: the pod, its UID (the eviction's precondition) and its gang."""

    key: str
    uid: str
    node: str
    gang: str  # the VictimGang key: a PodGang's key, or the pod's own for a pod of no gang
    podgang: GangRef | None  # the PodGang it belongs to, if any (its status says it was preempted)
    priority: int


@dataclass
class Candidates:
    victims: list[Victim] = field(default_factory=list)
    gangs: dict[str, VictimGang] = field(default_factory=dict)
    running: dict[str, VictimPod] = field(default_factory=dict)  # victim key → what evicting it needs
    reserved: dict[str, GangRef] = field(default_factory=dict)  # reserved gang's key → the gang
    terminating: dict[str, str] = field(default_factory=dict)  # pod being deleted → its node
    coming_free: dict[str, dict[str, int]] = field(default_factory=dict)  # node → what those pods free
    budgets: list[Budget] = field(default_factory=list)  # PodDisruptionBudgets over our running victims

    def reserved_only(self) -> Candidates:
        """Only the reservations: what may make way without evicting anything."""
        gangs = {key: gang for key, gang in self.gangs.items() if gang.reserved}
        victims = [v for v in self.victims if v.gang in gangs]
        return Candidates(victims, gangs, {}, self.reserved, self.terminating, self.coming_free, [])


def gather(
    *,
    store: ClusterStore,
    table: GangTable,
    preemptor: GangRef,
    priority: int,
    evict: bool,
    useful: Collection[str] | None,
    excluded: Collection[str] = (),
) -> Candidates:
    """The candidates below ``priority`` for ``preemptor``; ``evict``: running pods too (else reservations only);
    ``useful``: the nodes the preemptor could run on (``None``: any); ``excluded``: pods to leave out."""
    found = Candidates()
    for ref, held in table.reserved_gangs():
        if ref.key == preemptor.key:
            continue
        value = priority_of(store, ref)
        if value is not None and value < priority and _touches(useful, [node for node, _ in held.values()]):
            found.gangs[ref.key] = VictimGang(ref.key, value, reserved=True)
            found.reserved[ref.key] = ref
            found.victims.extend(Victim(pod, node, demand, ref.key) for pod, (node, demand) in sorted(held.items()))
    running: dict[str, tuple[GangRef, list[Pod]]] = {}
    for pod in store.pods():
        if not pod.spec.nodeName or pod.terminal:
            continue
        if pod.deleting:
            if pod.key not in excluded:
                _coming_free(found, pod.key, pod.spec.nodeName, store.requests_of(pod))
        elif evict:  # every running member, excluded ones too: a gang with one is left out whole below
            ref = gang_ref_of(pod)
            running.setdefault(ref.key, (ref, []))[1].append(pod)
    for foreign in store.foreign_pods():
        _foreign(found, foreign, excluded, priority=priority if evict else None, useful=useful)
    labels: dict[str, dict[str, dict[str, str]]] = {}  # namespace → victim → its labels
    for key, (ref, pods) in running.items():
        if key == preemptor.key or any(pod.key in excluded for pod in pods):
            continue
        if _our_gang(found, store, ref, pods, priority=priority, useful=useful):
            for pod in pods:
                labels.setdefault(pod.metadata.namespace, {})[pod.key] = pod.metadata.labels
    found.budgets = _budgets(store, labels)
    return found


def _budgets(store: ClusterStore, labels: Mapping[str, Mapping[str, dict[str, str]]]) -> list[Budget]:
    """Every PodDisruptionBudget covering some of our victims, with the evictions it allows now. (Other schedulers'
    pods are kept without their labels: a budget over them is met at the eviction's dry run instead.)"""
    found = []
    for namespace, victims in sorted(labels.items()):
        for budget in store.disruption_budgets(namespace):
            covered = tuple(sorted(key for key, pod_labels in victims.items() if budget.covers(namespace, pod_labels)))
            if covered:
                found.append(Budget(budget.key, covered, budget.allowed()))
    return found


def priority_of(store: ClusterStore, ref: GangRef) -> int | None:
    """The gang's priority (``translation.priority``), None when it cannot be read (its PodGang or pod is gone)."""
    if ref.solo:
        pod = store.pod(f"{ref.namespace}/{ref.name}")
        return pod_priority(pod, store) if pod is not None else None
    podgang = store.podgang(ref.key)
    return gang_priority(podgang, store.pods_of_gang(ref.key), store).value if podgang is not None else None


def _touches(useful: Collection[str] | None, nodes: Collection[str]) -> bool:
    return useful is None or any(node in useful for node in nodes)


def _coming_free(found: Candidates, key: str, node: str, demand: Mapping[str, int]) -> None:
    found.terminating[key] = node
    into = found.coming_free.setdefault(node, {})
    for resource, units in demand.items():
        into[resource] = into.get(resource, 0) + units


def _foreign(
    found: Candidates,
    pod: ForeignPod,
    excluded: Collection[str],
    *,
    priority: int | None,
    useful: Collection[str] | None,
) -> None:
    """Another scheduler's pod: capacity coming free if it is being deleted, else a victim of its own."""
    if not pod.node or pod.terminal or pod.key in excluded:
        return
    if pod.deleting:
        _coming_free(found, pod.key, pod.node, pod.requests)
        return
    if priority is None or pod.priority >= priority or (useful is not None and pod.node not in useful):
        return
    gang = f"pod:{pod.key}"
    found.gangs[gang] = VictimGang(gang, pod.priority)
    found.victims.append(Victim(pod.key, pod.node, pod.requests, gang))
    found.running[pod.key] = VictimPod(pod.key, pod.uid, pod.node, gang, None, pod.priority)


def _our_gang(
    found: Candidates,
    store: ClusterStore,
    ref: GangRef,
    pods: list[Pod],
    *,
    priority: int,
    useful: Collection[str] | None,
) -> bool:
    """One of our gangs' running members (or a pod of no gang) as victims, if below ``priority`` (True when they
    are); a gang with an excluded member was left out whole before (it could be evicted neither whole nor, safely,
    in part)."""
    podgang = None if ref.solo else store.podgang(ref.key)
    value = (
        pod_priority(pods[0], store) if ref.solo else gang_priority(podgang, store.pods_of_gang(ref.key), store).value
    )
    if value >= priority or not _touches(useful, [pod.spec.nodeName for pod in pods]):
        return False
    groups = podgang.spec.podgroups if podgang is not None else []
    group_of = {r.key_in(ref.namespace): g.name for g in groups for r in g.podReferences}
    found.gangs[ref.key] = VictimGang(ref.key, value, {g.name: g.minReplicas for g in groups})
    for pod in sorted(pods, key=lambda p: p.key):
        found.victims.append(
            Victim(pod.key, pod.spec.nodeName, store.requests_of(pod), ref.key, group_of.get(pod.key, ""))
        )
        found.running[pod.key] = VictimPod(
            pod.key, pod.metadata.uid, pod.spec.nodeName, ref.key, None if ref.solo else ref, value
        )
    return True
