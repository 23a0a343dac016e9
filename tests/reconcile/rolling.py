"""What the rolling-update tests share: which template generation a pod was made from, the invariants a rolling
update must keep at every moment, the cluster's part (a gang scheduler binding whole gangs, a kubelet making pods
Ready) over the in-memory API, and the columns ``kubectl get`` prints from the shipped CRDs.

The invariants are read from pods alone, as a user watching ``kubectl get pods -w`` would see them:
- a gang (``grove.io/podgang``) never holds pods of two templates, nor does a PodCliqueSet replica (a pod of a clique
  the update did not change belongs to both generations);
- no more than one PodCliqueSet replica is below ``minAvailable`` at once (Grove's availability: every standalone
  PodClique with ``minAvailable`` Ready pods, every scaling group with ``minAvailable`` replicas that have them).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol

import yaml

from api.grove import (
    LABEL_PCS_REPLICA_INDEX,
    LABEL_PODCLIQUE,
    LABEL_PODGANG,
    LABEL_TEMPLATE_HASH,
)
from benchmarks.sim.fakeapi import PODGANGS, PODS, FakeApiServer
from scheduler.reconcile.desired.state import CliquePlan, desired_state
from scheduler.reconcile.desired.template_hash import pcs_hashes
from scheduler.reconcile.memory_client import InMemoryApi
from tests.crd_schema import CRDS
from tests.reconcile.examples import pcs_model

Pod = Mapping[str, Any]


def with_image(document: Mapping[str, Any], clique: str, image: str) -> dict[str, Any]:
    """``document`` with the first container of ``clique`` running ``image``: what a user edits to roll out."""
    changed = copy.deepcopy(dict(document))
    (template,) = [c for c in changed["spec"]["template"]["cliques"] if c["name"] == clique]
    template["spec"]["podSpec"]["containers"][0]["image"] = image
    return changed


def live(pods: Iterable[Pod]) -> list[Pod]:
    return [pod for pod in pods if not pod["metadata"].get("deletionTimestamp")]


def ready(pod: Pod) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@dataclass
class Generations:
    """Every template a PodCliqueSet has had, in order; a pod belongs to each generation whose template for its
    clique has the pod's hash."""

    document: dict[str, Any]
    hashes: list[dict[str, str]] = field(default_factory=list)  # per generation: clique name → pod-template hash
    plans: dict[str, CliquePlan] = field(default_factory=dict)  # PodClique FQN → its plan (for minAvailable etc.)

    def __post_init__(self) -> None:
        self.add(self.document)

    def add(self, document: Mapping[str, Any]) -> None:
        model = pcs_model(copy.deepcopy(dict(document)))
        self.document = copy.deepcopy(dict(document))
        self.hashes.append(pcs_hashes(model).templates)
        self.plans = desired_state(model, None).cliques()

    def of(self, pod: Pod) -> frozenset[int]:
        labels = pod["metadata"]["labels"]
        clique = self.plans[labels[LABEL_PODCLIQUE]].template.name
        return frozenset(g for g, hashes in enumerate(self.hashes) if hashes[clique] == labels[LABEL_TEMPLATE_HASH])

    def latest(self, pod: Pod) -> bool:
        return len(self.hashes) - 1 in self.of(pod)

    def mixed(self, pods: Iterable[Pod], *, terminating: bool = False, replicas: bool = True) -> list[str]:
        """Every gang and (with ``replicas``) PodCliqueSet replica whose live pods (with ``terminating``, also those
        still running out their grace period) share no generation."""
        found: list[str] = []
        for label in (LABEL_PODGANG, LABEL_PCS_REPLICA_INDEX) if replicas else (LABEL_PODGANG,):
            groups: dict[str, list[Pod]] = {}
            for pod in list(pods) if terminating else live(pods):
                groups.setdefault(pod["metadata"]["labels"][label], []).append(pod)
            for key, members in sorted(groups.items()):
                if members and not frozenset.intersection(*(self.of(pod) for pod in members)):
                    found.append(f"{label}={key}: {sorted(sorted(self.of(p)) for p in members)}")
        return found

    def unavailable(self, pods: Iterable[Pod], replicas: int) -> list[int]:
        """PodCliqueSet replicas below ``minAvailable`` (Grove's ``computeReplicaStatus``, from pods)."""
        counts: dict[str, int] = {}
        for pod in live(pods):
            if ready(pod):
                fqn = pod["metadata"]["labels"][LABEL_PODCLIQUE]
                counts[fqn] = counts.get(fqn, 0) + 1
        down = []
        for replica in range(replicas):
            plans = [p for p in self.plans.values() if p.pcs_replica == replica]
            whole = all(counts.get(p.fqn, 0) >= p.min_available for p in plans if p.group is None)
            by_group: dict[str, dict[int, bool]] = {}
            minimum: dict[str, int] = {}
            for plan in plans:
                if plan.group is not None:
                    slots = by_group.setdefault(plan.group.fqn, {})
                    ok = counts.get(plan.fqn, 0) >= plan.min_available
                    slots[plan.group.replica] = slots.get(plan.group.replica, True) and ok
                    minimum[plan.group.fqn] = plan.group.config.minAvailable or 1
            whole = whole and all(sum(slots.values()) >= minimum[name] for name, slots in by_group.items())
            if not whole:
                down.append(replica)
        return down


class Objects(Protocol):
    """Where the stand-in reads and writes: the in-memory API, or the fake API server."""

    def pods(self) -> list[dict[str, Any]]: ...

    def gangs(self) -> list[dict[str, Any]]: ...

    def bind(self, namespace: str, name: str) -> None: ...

    def make_ready(self, namespace: str, name: str) -> None: ...


@dataclass
class InMemory:
    api: InMemoryApi

    def pods(self) -> list[dict[str, Any]]:
        return self.api.of_kind("Pod")

    def gangs(self) -> list[dict[str, Any]]:
        return self.api.of_kind("PodGang")

    def bind(self, namespace: str, name: str) -> None:
        self.api.bind_pod(namespace, name, "node-0")

    def make_ready(self, namespace: str, name: str) -> None:
        self.api.set_pod_ready(namespace, name)


@dataclass
class OnServer:
    server: FakeApiServer

    def pods(self) -> list[dict[str, Any]]:
        return self.server.objects(PODS)

    def gangs(self) -> list[dict[str, Any]]:
        return self.server.objects(PODGANGS)

    def bind(self, namespace: str, name: str) -> None:
        self.server.bind(name, namespace, "node-0")

    def make_ready(self, namespace: str, name: str) -> None:
        pod = self.server.get(PODS, name, namespace)
        if pod is not None:  # what the kubelet reports once the containers run
            pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
            self.server.put(PODS, pod)


class ClusterStandIn:
    """The cluster's part: a gang scheduler that binds a PodGang's pods all at once, once every PodGroup lists its
    ``minReplicas`` pods and none of them is gated (what the extender does), and a kubelet that makes a bound pod
    Ready."""

    def __init__(self, objects: InMemoryApi | Objects) -> None:
        self.objects: Objects = InMemory(objects) if isinstance(objects, InMemoryApi) else objects

    def complete_gangs(self) -> list[str]:
        pods = {pod["metadata"]["name"]: pod for pod in live(self.objects.pods())}
        found = []
        for gang in self.objects.gangs():
            names = [ref["name"] for group in gang["spec"]["podgroups"] for ref in group.get("podReferences") or []]
            whole = all(len(g.get("podReferences") or []) >= g["minReplicas"] for g in gang["spec"]["podgroups"])
            members = [pods[name] for name in names if name in pods]
            gated = any(p["spec"].get("schedulingGates") for p in members)
            unbound = any(not p["spec"].get("nodeName") for p in members)
            if whole and len(members) == len(names) and not gated and unbound:
                found.append(gang["metadata"]["name"])
        return found

    def schedule(self, gang: str) -> None:
        pods = {pod["metadata"]["name"]: pod for pod in live(self.objects.pods())}
        (podgang,) = [g for g in self.objects.gangs() if g["metadata"]["name"] == gang]
        for group in podgang["spec"]["podgroups"]:
            for ref in group.get("podReferences") or []:
                pod = pods.get(ref["name"])
                if pod is not None and not pod["spec"].get("nodeName"):
                    self.objects.bind(ref["namespace"], ref["name"])

    def starting(self) -> list[str]:
        """Bound pods the kubelet has not made Ready yet."""
        return sorted(
            pod["metadata"]["name"]
            for pod in live(self.objects.pods())
            if pod["spec"].get("nodeName") and not ready(pod)
        )

    def start(self, name: str, namespace: str = "default") -> None:
        self.objects.make_ready(namespace, name)

    def settle(self) -> int:
        """Schedule every whole gang and start every bound pod (the reconciler's part is the caller's); returns how
        many gangs and pods that was."""
        done = 0
        while gangs := self.complete_gangs():
            for gang in gangs:
                self.schedule(gang)
            done += len(gangs)
        for name in self.starting():
            self.start(name)
            done += 1
        return done


# --- kubectl's columns -------------------------------------------------------------------------------------------

_FILTER = re.compile(r'^\[\?\(@\.(?P<key>\w+)=="(?P<value>[^"]*)"\)\]')


def _jsonpath(obj: Any, path: str) -> Any:
    """The subset of Kubernetes JSONPath the shipped printer columns use: ``.a.b``, ``[?(@.k=="v")]``."""
    value, rest = obj, path
    while rest and value is not None:
        if match := _FILTER.match(rest):
            items = value if isinstance(value, list) else []
            value = next((i for i in items if i.get(match["key"]) == match["value"]), None)
            rest = rest[match.end() :]
        else:
            key = re.match(r"^\.(\w+)", rest)
            assert key, f"unsupported JSONPath {path!r} at {rest!r}"
            value = value.get(key[1]) if isinstance(value, dict) else None
            rest = rest[key.end() :]
    return value


@cache
def columns(crd: str) -> list[dict[str, Any]]:
    """The printer columns of a shipped CRD, as ``kubectl get`` shows them by default (priority 0, no Age)."""
    (document,) = [d for d in yaml.safe_load_all((CRDS / f"{crd}.yaml").read_text()) if d]
    (version,) = document["spec"]["versions"]
    return [c for c in version["additionalPrinterColumns"] if not c.get("priority") and c["type"] != "date"]


def row(obj: Mapping[str, Any], crd: str) -> dict[str, Any]:
    """What ``kubectl get <kind>`` prints for ``obj``, by column: values as the API server's table has them
    (``None`` where the field is unset)."""
    return {"NAME": obj["metadata"]["name"]} | {c["name"]: _jsonpath(obj, c["jsonPath"]) for c in columns(crd)}


def table(objects: Sequence[Mapping[str, Any]], crd: str) -> list[dict[str, Any]]:
    return [row(obj, crd) for obj in sorted(objects, key=lambda o: o["metadata"]["name"])]
