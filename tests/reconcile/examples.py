"""The shipped example PodCliqueSets and small helpers to run the reconciler over them in memory."""

from __future__ import annotations

import copy
import random
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from api.grove import PodCliqueSet
from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.desired.cliques import pcs_owner, podclique_object
from scheduler.reconcile.desired.pods import pod_object
from scheduler.reconcile.desired.state import CliquePlan
from scheduler.reconcile.memory_client import InMemoryApi
from scheduler.reconcile.rules.defaults import with_defaults

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"
POD_NAME = re.compile(r"^(?P<clique>.+)-[bcdfghjklmnpqrstvwxz2456789]{5}$")


def example(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    return document


def pcs_model(document: dict[str, Any]) -> PodCliqueSet:
    return with_defaults(PodCliqueSet.model_validate(document))


def built_pod(pcs: PodCliqueSet, clique: CliquePlan, *, index: int, name: str) -> dict[str, Any]:
    """The pod for ``clique`` as the controller builds it: from its PodClique (given the uid ``uid-of-<fqn>``)."""
    podclique = podclique_object(pcs=pcs, clique=clique, owner=pcs_owner(pcs), template_hash="h")
    podclique["metadata"]["uid"] = f"uid-of-{clique.fqn}"
    return pod_object(
        podclique=podclique, clique=clique, index=index, name=name, scheduler_name="grove", initc_image="initc:test"
    )


def cluster(*objects: dict[str, Any]) -> InMemoryApi:
    api = InMemoryApi()
    for obj in objects:
        api.apply(copy.deepcopy(obj))
    return api


def reconciler(api: InMemoryApi, seed: int = 1) -> Reconciler:
    return Reconciler(api, rng=random.Random(seed))


def _pods(source: InMemoryApi | Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """The pods of an in-memory API, or the given pods (as a fake API server lists them)."""
    return source.of_kind("Pod") if isinstance(source, InMemoryApi) else source


def pods_per_gang(source: InMemoryApi | Iterable[dict[str, Any]]) -> Counter[str]:
    return Counter(pod["metadata"]["labels"]["grove.io/podgang"] for pod in _pods(source))


def pod_names(source: InMemoryApi | Iterable[dict[str, Any]]) -> set[str]:
    return {pod["metadata"]["name"] for pod in _pods(source)}


def gated(pod: dict[str, Any]) -> bool:
    return any(g["name"] == "grove.io/podgang-pending-creation" for g in pod["spec"].get("schedulingGates") or [])
