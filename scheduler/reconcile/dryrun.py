"""``reconcile --dry-run``: the objects the reconciler would create for a PodCliqueSet on an empty cluster.

It runs the real controller against the in-memory API (so the output cannot drift from what the controller does)
and returns the created objects, in creation order, as a Kubernetes ``List``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from scheduler.reconcile.api import KubeObject
from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.memory import InMemoryApi

__all__ = ["DryRunRejected", "dry_run"]


class DryRunRejected(ValueError):
    """The PodCliqueSet is invalid; the message lists every field and rule, one per line."""


def dry_run(objects: Iterable[KubeObject], *, scheduler_name: str = "grove", seed: int = 0) -> KubeObject:
    """``objects``: PodCliqueSets, optionally with the ClusterTopologyBinding they name."""
    api = InMemoryApi()
    for obj in objects:
        if obj.get("kind") == "PodCliqueSet":
            obj.setdefault("metadata", {}).setdefault("namespace", "default")
            obj.pop("status", None)  # an empty cluster: nothing accepted before (e.g. `kubectl get -o yaml` output)
        api.apply(obj)
    if not api.of_kind("PodCliqueSet"):
        raise DryRunRejected("no PodCliqueSet in the input")
    reconciler = Reconciler(api, scheduler_name=scheduler_name, rng=random.Random(seed))
    problems: list[str] = []
    for pcs in api.list_podcliquesets():
        meta = pcs["metadata"]
        outcome = reconciler.reconcile(meta["namespace"], meta["name"])
        problems += [f"PodCliqueSet {meta['namespace']}/{meta['name']}: {error}" for error in outcome.errors]
    if problems:
        raise DryRunRejected("\n".join(problems))
    reconciler.converge()
    return {"apiVersion": "v1", "kind": "List", "items": api.created}
