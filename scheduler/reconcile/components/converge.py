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
  ``Conflict`` retried next pass, never overwritten.
- ``delete_orphans``: what a deleted PodCliqueSet owned directly. The garbage collector does this on a
  real cluster; doing it too makes deletion prompt and GC-independent.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping

from api.grove import PodCliqueSet
from scheduler.reconcile.client import KubeObject, OwnedKind, ReconcileApi
from scheduler.reconcile.components.observed import controlled
from scheduler.reconcile.desired.gangs import normalised_spec

__all__ = ["FieldPath", "converge_fields", "converge_one", "converge_scaled", "delete_orphans"]

log = logging.getLogger(__name__)
FieldPath = tuple[str, ...]


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
    kind: OwnedKind,
    *,
    namespace: str,
    live: Mapping[str, KubeObject],
    wanted: Mapping[str, KubeObject],
) -> tuple[dict[str, KubeObject], int]:
    """Returns the live objects by name after the writes, and the writes issued."""
    writes = 0
    for name in sorted(live.keys() - wanted.keys()):
        api.delete(kind, namespace=namespace, name=name)
        log.info("deleted kind=%s object=%s/%s", kind, namespace, name)
        writes += 1
    result: dict[str, KubeObject] = {}
    for name, obj in wanted.items():
        current = live.get(name)
        if current is None:
            result[name] = api.create(obj)
            log.info("created kind=%s object=%s/%s replicas=%s", kind, namespace, name, obj["spec"]["replicas"])
            writes += 1
            continue
        if _differs_but_replicas(current, obj):
            updated = copy.deepcopy(current)
            updated["metadata"]["labels"] = obj["metadata"]["labels"]
            updated["metadata"]["annotations"] = obj["metadata"].get("annotations", {})
            updated["spec"] = {**obj["spec"], "replicas": current["spec"].get("replicas")}
            current = api.replace(updated)
            writes += 1
        result[name] = current
    return result, writes


def _differs_but_replicas(live: KubeObject, wanted: KubeObject) -> bool:
    """Anything but ``spec.replicas`` differs (that one is the scaler's, not the template's)."""
    live_meta, wanted_meta = live["metadata"], wanted["metadata"]
    live_spec = {k: v for k, v in (live.get("spec") or {}).items() if k != "replicas"}
    wanted_spec = {k: v for k, v in wanted["spec"].items() if k != "replicas"}
    return bool(
        normalised_spec(live_spec) != normalised_spec(wanted_spec)
        or (live_meta.get("labels") or {}) != wanted_meta["labels"]
        or (live_meta.get("annotations") or {}) != wanted_meta.get("annotations", {})
    )


def delete_orphans(api: ReconcileApi, kind: OwnedKind, *, namespace: str, pcs: str) -> int:
    """Delete the objects of ``kind`` with an owner reference to the PodCliqueSet ``pcs``; returns the writes."""
    writes = 0
    for obj in api.list_owned(kind, namespace=namespace, part_of=pcs):
        refs = obj["metadata"].get("ownerReferences") or []
        if any(r.get("kind") == "PodCliqueSet" and r.get("name") == pcs for r in refs):
            api.delete(kind, namespace=namespace, name=obj["metadata"]["name"])
            writes += 1
    return writes
