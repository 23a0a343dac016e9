"""Each PodClique's pods, as Grove's PodClique controller keeps them (``podclique/components/pod``): ``spec.replicas``
of them, each at its own pod index, gated until its gang is listed.

Level-triggered and idempotent: pods are recognised by their PodClique and pod-index labels and their owner, never
remembered, so a restart neither duplicates nor loses one. Scale-out fills the lowest free indices (as Grove
does); scale-in removes pods in Grove's deletion order (``deletionsort.go``): terminating, then unscheduled,
pending, not ready, of an old template, newest first — the pods that cost least to lose go first.

A rolling update replaces the PCS replica it has reached gang by gang, each gang whole: every pod of a gang holding
a pod of another template than its PodClique's is deleted at once, and no pod of the replica is created again until
every old pod of it is gone (not only terminating). So old and new pods never share a gang or a replica, the new
PodGangs are placed whole, and their capacity is free when they are. Under OnDelete, a replica with an old pod still
terminating gets no new pod either, so a gang a user deletes comes back whole on the new template. (Grove replaces
a standalone PodClique's pods one at a time, so its base PodGang holds both templates for a while; its
scaling-group replicas are recreated whole, as here.)
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from api.grove import LABEL_POD_INDEX, LABEL_PODCLIQUE, LABEL_PODGANG, LABEL_TEMPLATE_HASH, PodCliqueSet
from scheduler.reconcile.client import ApiError, Conflict, KubeObject, ReconcileApi
from scheduler.reconcile.components.component import PassState, Refused
from scheduler.reconcile.components.converge import delete_orphans
from scheduler.reconcile.desired.claims import pod_claim_names
from scheduler.reconcile.desired.pods import pod_name, pod_object
from scheduler.reconcile.desired.state import CliquePlan
from scheduler.reconcile.fanout import Fanout
from scheduler.reconcile.live import is_terminating, pod_is_bound, pod_is_ready
from scheduler.reconcile.rules.fields import FieldError

__all__ = ["PodRefused", "Pods"]

log = logging.getLogger(__name__)
_NAME_ATTEMPTS = 5  # random-suffix collisions are ~1 in 14 million; five tries is plenty
_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


class PodRefused(Refused):
    """The API server rejected a pod built from a clique's podSpec (400/422): the spec is invalid."""


def _deletion_order(expected_hash: str) -> Any:
    def key(pod: Mapping[str, Any]) -> tuple[Any, ...]:
        labels = pod["metadata"].get("labels") or {}
        created = pod["metadata"].get("creationTimestamp") or ""
        return (
            not is_terminating(pod),
            pod_is_bound(pod),
            _PHASE_ORDER.get((pod.get("status") or {}).get("phase", ""), 0),
            pod_is_ready(pod),
            labels.get(LABEL_TEMPLATE_HASH) == expected_hash,
            bool(created),
            _Descending(created),
            _Descending(_index(labels.get(LABEL_POD_INDEX)) or 0),
        )

    return key


class _Descending:
    """Reverses the order of one sort-key component (newer and higher-index first)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Descending) -> bool:
        return bool(self.value > other.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.value == other.value

    __hash__ = None  # type: ignore[assignment]


@dataclass
class Pods:
    api: ReconcileApi
    rng: random.Random
    scheduler_name: str
    initc_image: str
    fanout: Fanout = field(default_factory=Fanout)

    def sync(self, state: PassState) -> int:
        """Leaves each PodClique's kept pods, by index, in ``state.pods_by_clique``; raises ``PodRefused`` when the
        API server refuses a pod built from a clique's pod spec."""
        state.pods_by_clique, writes = self._sync(
            state.pcs,
            cliques=state.desired.cliques(),
            podcliques=state.podcliques,
            pods=state.observed.pods,
            replacing=state.rollout.updating,
        )
        return writes

    def delete(self, *, namespace: str, pcs: str) -> int:
        # Pods the PodCliqueSet owns itself, made before PodCliques existed; the others go with their PodClique.
        return delete_orphans(self.api, "Pod", namespace=namespace, pcs=pcs)

    def _sync(
        self,
        pcs: PodCliqueSet,
        *,
        cliques: Mapping[str, CliquePlan],
        podcliques: Mapping[str, KubeObject],
        pods: list[KubeObject],
        replacing: int | None,
    ) -> tuple[dict[str, list[KubeObject]], int]:
        """``replacing``: the PCS replica a rolling update is replacing, if any."""
        writes = 0
        namespace = pcs.metadata.namespace
        by_clique: dict[str, dict[int, KubeObject]] = {fqn: {} for fqn in cliques}
        # Live, bound, older-named pods first, so a duplicate index (never made by us) keeps the pod that runs.
        for pod in sorted(pods, key=lambda p: (is_terminating(p), not pod_is_bound(p), p["metadata"]["name"])):
            labels = pod["metadata"].get("labels") or {}
            plan = cliques.get(labels.get(LABEL_PODCLIQUE, ""))
            index = _index(labels.get(LABEL_POD_INDEX))
            finished = (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")
            # Evicted or exited pods hold their index but never run again: make room for a new one.
            wanted = not finished and plan is not None and index is not None and labels.get(LABEL_PODGANG) == plan.gang
            if wanted and plan is not None and index is not None and index not in by_clique[plan.fqn]:
                by_clique[plan.fqn][index] = pod
            elif not is_terminating(pod):
                self.api.delete("Pod", namespace=namespace, name=pod["metadata"]["name"])
                writes += 1
        held, waiting = _replaced_cliques(cliques, podcliques=podcliques, pods=pods, replica=replacing)
        if held:
            for fqn in sorted(held):
                for index, pod in list(by_clique[fqn].items()):
                    if not is_terminating(pod):
                        self.api.delete("Pod", namespace=namespace, name=pod["metadata"]["name"])
                        writes += 1
                    del by_clique[fqn][index]
            log.info("replacing gangs pcs=%s/%s replica=%s", namespace, pcs.metadata.name, replacing)
        result: dict[str, list[KubeObject]] = {}
        for fqn, plan in cliques.items():
            kept = by_clique[fqn]
            podclique = podcliques.get(fqn)
            excess = len(kept) - plan.replicas
            if excess > 0:
                expected = ((podclique or {}).get("metadata", {}).get("labels") or {}).get(LABEL_TEMPLATE_HASH, "")
                for pod in sorted(kept.values(), key=_deletion_order(expected))[:excess]:
                    self.api.delete("Pod", namespace=namespace, name=pod["metadata"]["name"])
                    writes += 1
                    del kept[_index(pod["metadata"]["labels"][LABEL_POD_INDEX]) or 0]
            elif excess < 0 and podclique is not None and fqn not in waiting:
                free = (index for index in range(plan.replicas + len(kept)) if index not in kept)
                indices = [next(free) for _ in range(-excess)]  # lowest free indices first
                # Names drawn here, in index order, so a seeded ``rng`` names the same pods however the creates
                # interleave; only a taken name draws again, on the create's own thread.
                named = [(index, pod_name(plan.fqn, self.rng)) for index in indices]
                made = self.fanout.map(functools.partial(self._create_named, pcs, plan, podclique), named)
                kept.update(zip(indices, made, strict=True))
                writes += len(made)
            result[fqn] = [kept[index] for index in sorted(kept)]
        return result, writes

    def _create_named(
        self, pcs: PodCliqueSet, plan: CliquePlan, podclique: KubeObject, named: tuple[int, str]
    ) -> KubeObject:
        return self._create(pcs, plan, podclique, *named)

    def _create(self, pcs: PodCliqueSet, plan: CliquePlan, podclique: KubeObject, index: int, name: str) -> KubeObject:
        for attempt in range(_NAME_ATTEMPTS):
            name = name if attempt == 0 else pod_name(plan.fqn, self.rng)
            pod = pod_object(
                podclique=podclique,
                clique=plan,
                index=index,
                name=name,
                scheduler_name=self.scheduler_name,
                initc_image=self.initc_image,
                claims=pod_claim_names(
                    pcs=pcs.metadata.name,
                    pcs_sharing=pcs.spec.template.resourceSharing,
                    clique=plan,
                    pod_index=index,
                ),
            )
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
            log.info("created pod=%s/%s gang=%s index=%d", pcs.metadata.namespace, name, plan.gang, index)
            return created
        raise AssertionError("unreachable")


def _replaced_cliques(
    cliques: Mapping[str, CliquePlan],
    *,
    podcliques: Mapping[str, KubeObject],
    pods: list[KubeObject],
    replica: int | None,
) -> tuple[set[str], set[str]]:
    """(the PodCliques whose pods go: every gang of PCS replica ``replica``, the one a rolling update is replacing,
    that still holds a pod of another template than its PodClique's; the PodCliques that get no new pod in this
    pass: those, and every PodClique of a PCS replica that still holds a pod of another template, terminating, or
    any such pod if it is the replica being replaced).

    Waiting for the old pods to be *gone*, not only deleted, is what keeps two templates from running side by side:
    a deleted pod runs until its grace period ends, the replica's gangs rarely finish terminating together, and an
    update restarted on a newer template may not have picked its replica yet in the pass that sees them go. It also
    covers OnDelete, where a user deletes a gang's pods one request at a time: the gang comes back whole, on the new
    template, once its last old pod is gone."""
    replaced: set[str] = set()
    waiting_replicas: set[int] = set()
    for pod in pods:
        plan = cliques.get((pod["metadata"].get("labels") or {}).get(LABEL_PODCLIQUE, ""))
        podclique = podcliques.get(plan.fqn) if plan is not None else None
        if plan is None or podclique is None or _template(pod) == _template(podclique):
            continue
        if plan.pcs_replica == replica:
            replaced.add(plan.gang)
        if plan.pcs_replica == replica or is_terminating(pod):
            waiting_replicas.add(plan.pcs_replica)
    held = {fqn for fqn, plan in cliques.items() if plan.gang in replaced}
    return held, {fqn for fqn, plan in cliques.items() if plan.pcs_replica in waiting_replicas}


def _template(obj: Mapping[str, Any]) -> str:
    return str((obj["metadata"].get("labels") or {}).get(LABEL_TEMPLATE_HASH, ""))


def _index(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
