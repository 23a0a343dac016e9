"""The rules by which a component makes the live objects of its kind what it wants, shared so that every kind
follows the same one.

- ``converge_fields``, for objects the template decides only in part (headless Services, HPAs, the startup-order
  identity): delete what is no longer wanted, create what is missing, and where the fields the component owns
  differ (labels, and the paths it names), write them onto the live object and PUT it with its
  ``resourceVersion``; every other field (a Service's ``clusterIP``, an HPA's status) is left as the API server and
  other controllers set it.
  ``converge_one`` does it for the one object of its name a PodCliqueSet has (its Role, say).
- ``converge_scaled``, for PodCliqueScalingGroups and PodCliques: created from the template; afterwards the
  template still decides everything but ``spec.replicas``, which belongs to whoever scales the object
  (``kubectl scale``, an HPA). An update writes the template's labels, annotations and spec over the live object
  with the live ``replicas`` kept, conditional on its ``resourceVersion``, so a scale that lands in between is a
  ``Conflict`` retried next pass, never overwritten. Both carry Grove's finalizer (added to an object made before
  it had one); one being deleted is left alone until it is gone, and made again on a later pass if still wanted.
- ``release``: the finalizer's remover. Whatever deletes such an object — the reconciler scaling in, a user, the
  garbage collector after its owner — it stays until the reconciler takes the finalizer off, as Grove's PodClique
  and scaling-group controllers do once they have cleaned up (``reconciledelete.go``).
- ``delete_orphans``: what a deleted PodCliqueSet owned directly. The garbage collector does this on a
  real cluster; doing it too makes deletion prompt and GC-independent.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Literal

from api.grove import FINALIZER_COMPUTE_DOMAIN, FINALIZER_PCSG, FINALIZER_PODCLIQUE, PodCliqueSet
from scheduler.reconcile.client import Conflict, KubeObject, NotFound, OwnedKind, ReconcileApi
from scheduler.reconcile.components.observed import controlled
from scheduler.reconcile.desired.gangs import normalised_spec
from scheduler.reconcile.live import is_terminating

__all__ = [
    "FINALIZERS",
    "FieldPath",
    "FinalizedKind",
    "ScaledKind",
    "converge_fields",
    "converge_one",
    "converge_scaled",
    "delete_orphans",
    "delete_scaled",
    "release",
]

log = logging.getLogger(__name__)
FieldPath = tuple[str, ...]
ScaledKind = Literal["PodClique", "PodCliqueScalingGroup"]
FinalizedKind = Literal["PodClique", "PodCliqueScalingGroup", "ComputeDomain"]
FINALIZERS: dict[FinalizedKind, str] = {
    "PodClique": FINALIZER_PODCLIQUE,
    "PodCliqueScalingGroup": FINALIZER_PCSG,
    "ComputeDomain": FINALIZER_COMPUTE_DOMAIN,
}


def _get(obj: Mapping[str, object], path: FieldPath) -> object:
    value: object = obj
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _set(obj: KubeObject, path: FieldPath, value: object) -> None:
    for key in path[:-1]:
        obj = obj.setdefault(key, {})
    obj[path[-1]] = copy.deepcopy(value)


def converge_fields(
    api: ReconcileApi,
    kind: OwnedKind,
    *,
    namespace: str,
    live: list[KubeObject],
    wanted: list[KubeObject],
    fields: tuple[FieldPath, ...],
) -> int:
    """Make the live objects of ``kind`` what ``wanted`` says in their labels and ``fields``; returns the writes."""
    writes = 0
    by_name = {obj["metadata"]["name"]: obj for obj in live}
    wanted_by_name = {obj["metadata"]["name"]: obj for obj in wanted}
    for name in sorted(by_name.keys() - wanted_by_name.keys()):
        api.delete(kind, namespace=namespace, name=name)
        writes += 1
    for name, obj in wanted_by_name.items():
        current = by_name.get(name)
        if current is None:
            api.create(obj)
            writes += 1
            continue
        labels = obj["metadata"].get("labels") or {}
        if (current["metadata"].get("labels") or {}) == labels and all(
            _get(current, path) == _get(obj, path) for path in fields
        ):
            continue
        updated = copy.deepcopy(current)
        updated["metadata"]["labels"] = dict(labels)
        for path in fields:
            _set(updated, path, _get(obj, path))
        api.replace(updated)
        writes += 1
    return writes


def converge_one(
    api: ReconcileApi, kind: OwnedKind, pcs: PodCliqueSet, *, wanted: KubeObject, fields: tuple[FieldPath, ...]
) -> int:
    """``converge_fields`` for the one object named as ``wanted`` that ``pcs`` controls; others of its kind are not
    looked at. Returns the writes issued."""
    name = wanted["metadata"]["name"]
    live = [obj for obj in controlled(api, kind, pcs, {pcs.metadata.uid}) if obj["metadata"]["name"] == name]
    return converge_fields(api, kind, namespace=pcs.metadata.namespace, live=live, wanted=[wanted], fields=fields)


def converge_scaled(
    api: ReconcileApi,
    kind: ScaledKind,
    *,
    namespace: str,
    live: Mapping[str, KubeObject],
    wanted: Mapping[str, KubeObject],
) -> tuple[dict[str, KubeObject], int]:
    """Returns the live objects by name after the writes (none being deleted), and the writes issued."""
    writes = 0
    for name in sorted(live.keys() - wanted.keys()):
        if is_terminating(live[name]):
            continue  # on its way out; its finalizer is released with the others (``release``)
        writes += release(api, kind, live[name])
        api.delete(kind, namespace=namespace, name=name)
        log.info("deleted kind=%s object=%s/%s", kind, namespace, name)
        writes += 1
    result: dict[str, KubeObject] = {}
    for name, obj in wanted.items():
        current = live.get(name)
        if current is None:
            writes += 1
            try:
                result[name] = api.create(obj)
            except Conflict:  # the name is still held, by one of ours on its way out: made on a later pass
                log.info("not created yet kind=%s object=%s/%s: the name is taken", kind, namespace, name)
                continue
            log.info("created kind=%s object=%s/%s replicas=%s", kind, namespace, name, obj["spec"]["replicas"])
            continue
        if is_terminating(current):
            continue  # not there for this pass: nothing is built on it, and it is made again once it is gone
        if _differs_but_replicas(current, obj):
            updated = copy.deepcopy(current)
            updated["metadata"]["labels"] = obj["metadata"]["labels"]
            updated["metadata"]["annotations"] = obj["metadata"].get("annotations", {})
            held = updated["metadata"].get("finalizers") or []
            updated["metadata"]["finalizers"] = held + [f for f in obj["metadata"]["finalizers"] if f not in held]
            updated["spec"] = {**obj["spec"], "replicas": current["spec"].get("replicas")}
            current = api.replace(updated)
            writes += 1
        result[name] = current
    return result, writes


def release(api: ReconcileApi, kind: FinalizedKind, obj: KubeObject) -> int:
    """Take Grove's finalizer off ``obj`` (a PUT on the ``resourceVersion`` read), so its deletion can finish; other
    finalizers stay. Returns the writes issued; one that raced another writer is retried on the next pass, which
    reads the object anew."""
    finalizer = FINALIZERS[kind]
    finalizers = obj["metadata"].get("finalizers") or []
    if finalizer not in finalizers:
        return 0
    updated = copy.deepcopy(obj)
    updated["metadata"]["finalizers"] = [f for f in finalizers if f != finalizer]
    try:
        api.replace(updated)
    except (Conflict, NotFound):
        log.info("finalizer not released yet kind=%s object=%s", kind, obj["metadata"]["name"])
    return 1


def _differs_but_replicas(live: KubeObject, wanted: KubeObject) -> bool:
    """Anything but ``spec.replicas`` differs (that one is the scaler's, not the template's), or a finalizer is
    missing."""
    live_meta, wanted_meta = live["metadata"], wanted["metadata"]
    live_spec = {k: v for k, v in (live.get("spec") or {}).items() if k != "replicas"}
    wanted_spec = {k: v for k, v in wanted["spec"].items() if k != "replicas"}
    return bool(
        normalised_spec(live_spec) != normalised_spec(wanted_spec)
        or (live_meta.get("labels") or {}) != wanted_meta["labels"]
        or (live_meta.get("annotations") or {}) != wanted_meta.get("annotations", {})
        or not set(wanted_meta.get("finalizers") or []) <= set(live_meta.get("finalizers") or [])
    )


def delete_scaled(api: ReconcileApi, kind: FinalizedKind, *, namespace: str, pcs: str) -> int:
    """``delete_orphans`` for the kinds that carry Grove's finalizer: release it on every one labelled part of the
    deleted PodCliqueSet (those of a scaling group too, which the garbage collector deletes after the group), then
    delete those the PodCliqueSet owned. Returns the writes."""
    writes = 0
    for obj in api.list_owned(kind, namespace=namespace, part_of=pcs):
        writes += release(api, kind, obj)
    return writes + delete_orphans(api, kind, namespace=namespace, pcs=pcs)


def delete_orphans(api: ReconcileApi, kind: OwnedKind, *, namespace: str, pcs: str) -> int:
    """Delete the objects of ``kind`` with an owner reference to the PodCliqueSet ``pcs``; returns the writes."""
    writes = 0
    for obj in api.list_owned(kind, namespace=namespace, part_of=pcs):
        refs = obj["metadata"].get("ownerReferences") or []
        if obj["metadata"].get("deletionTimestamp"):
            continue  # being deleted already
        if any(r.get("kind") == "PodCliqueSet" and r.get("name") == pcs for r in refs):
            api.delete(kind, namespace=namespace, name=obj["metadata"]["name"])
            writes += 1
    return writes
