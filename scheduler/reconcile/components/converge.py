"""Converging the simple objects a PodCliqueSet owns: headless Services, HPAs, and the startup-order identity.

One rule for all of them: delete what is no longer wanted, create what is missing, and where the fields we own
differ (labels, and per kind the fields listed in ``_OWNED_FIELDS``), write them onto the live object and PUT it
with its ``resourceVersion``; every other field (a Service's ``clusterIP``, an HPA's status) is left as the API
server and other controllers set it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.reconcile.client import KubeObject, OwnedKind, ReconcileApi

__all__ = ["OwnedSync"]

_OWNED_FIELDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Service": (("spec", "selector"), ("spec", "publishNotReadyAddresses")),
    "HorizontalPodAutoscaler": (("spec",),),
    "ServiceAccount": (("automountServiceAccountToken",),),
    "Role": (("rules",),),
    "RoleBinding": (("subjects",),),
}


def _get(obj: Mapping[str, object], path: tuple[str, ...]) -> object:
    value: object = obj
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _set(obj: KubeObject, path: tuple[str, ...], value: object) -> None:
    for key in path[:-1]:
        obj = obj.setdefault(key, {})
    obj[path[-1]] = copy.deepcopy(value)


@dataclass(frozen=True)
class OwnedSync:
    api: ReconcileApi

    def sync(self, kind: OwnedKind, *, namespace: str, live: list[KubeObject], wanted: list[KubeObject]) -> int:
        """Make the live objects of ``kind`` what ``wanted`` says; returns the writes issued."""
        writes = 0
        by_name = {obj["metadata"]["name"]: obj for obj in live}
        wanted_by_name = {obj["metadata"]["name"]: obj for obj in wanted}
        for name in sorted(by_name.keys() - wanted_by_name.keys()):
            self.api.delete(kind, namespace=namespace, name=name)
            writes += 1
        for name, obj in wanted_by_name.items():
            current = by_name.get(name)
            if current is None:
                self.api.create(obj)
                writes += 1
                continue
            fields = _OWNED_FIELDS[kind]
            labels = obj["metadata"].get("labels") or {}
            if (current["metadata"].get("labels") or {}) == labels and all(
                _get(current, path) == _get(obj, path) for path in fields
            ):
                continue
            updated = copy.deepcopy(current)
            updated["metadata"]["labels"] = dict(labels)
            for path in fields:
                _set(updated, path, _get(obj, path))
            self.api.replace(updated)
            writes += 1
        return writes
