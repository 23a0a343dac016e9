"""``reconcile --dry-run``: the objects the reconciler would create for a PodCliqueSet on an empty cluster.

It runs the real controller against the in-memory API (so the output cannot drift from what the controller does)
and returns the created objects, in creation order, as a Kubernetes ``List``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.memory_client import InMemoryApi
from scheduler.reconcile.rules.features import Features
from scheduler.reconcile.rules.limits import Limits

__all__ = ["DryRunRejected", "dry_run"]


class DryRunRejected(ValueError):
    """The input is not what a dry run can take: one line naming the item and every field and rule it breaks."""


def _envelope_error(obj: KubeObject) -> str | None:
    """What keeps ``obj`` from being stored as a Kubernetes object at all (the API server's own checks)."""
    if not isinstance(obj.get("kind"), str) or not obj["kind"]:
        return "kind: must be a non-empty string"
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return f"metadata: must be an object, got {type(meta).__name__}"
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        return "metadata.name: must be a non-empty string"
    if "namespace" in meta and not isinstance(meta["namespace"], str):
        return "metadata.namespace: must be a string"
    for key in ("labels", "annotations"):
        values = meta.get(key)
        if values is not None and not (isinstance(values, dict) and all(isinstance(v, str) for v in values.values())):
            return f"metadata.{key}: must map strings to strings"
    return None


def dry_run(
    objects: Iterable[KubeObject],
    *,
    scheduler_name: str = "grove",
    seed: int = 0,
    limits: Limits | None = None,
    features: Features | None = None,
) -> KubeObject:
    """``objects``: PodCliqueSets, optionally with the ClusterTopologyBinding they name."""
    api = InMemoryApi()
    for index, obj in enumerate(objects):
        if problem := _envelope_error(obj):
            raise DryRunRejected(f"items[{index}] ({obj.get('kind') or 'object'}): {problem}")
        if obj["kind"] == "PodCliqueSet":
            obj["metadata"].setdefault("namespace", "default")
            obj.pop("status", None)  # an empty cluster: nothing accepted before (e.g. `kubectl get -o yaml` output)
        api.apply(obj)
    if not api.of_kind("PodCliqueSet"):
        raise DryRunRejected("no PodCliqueSet in the input")
    reconciler = Reconciler(
        api,
        scheduler_name=scheduler_name,
        rng=random.Random(seed),
        limits=limits or Limits(),
        features=features or Features(),
    )
    problems: list[str] = []
    for pcs in api.list_podcliquesets():
        meta = pcs["metadata"]
        outcome = reconciler.reconcile(meta["namespace"], meta["name"])
        if outcome.errors:
            problems.append(f"PodCliqueSet {meta['namespace']}/{meta['name']}: {'; '.join(outcome.errors)}")
    if problems:
        raise DryRunRejected(" | ".join(problems))
    reconciler.converge()
    return {"apiVersion": "v1", "kind": "List", "items": api.created}
