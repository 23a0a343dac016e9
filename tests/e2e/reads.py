"""What the scenarios read from the API server (never the product's internals), and how they wait for it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from benchmarks.controlplane.cluster import ControlPlane

T = TypeVar("T")

GROVE = "/apis/grove.io/v1alpha1/namespaces/{ns}"
PODGANGS = "/apis/scheduler.grove.io/v1alpha1/namespaces/{ns}/podgangs"
PODS = "/api/v1/namespaces/{ns}/pods"
_CLEARED = (
    "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliquesets",
    "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliquescalinggroups",
    "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliques",
    PODGANGS,
    "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers",
    "/api/v1/namespaces/{ns}/services",
    "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def wait_for(
    check: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    every: float = 0.5,
    show: Callable[[], object] | None = None,
) -> T:
    """``check()`` until it returns something truthy (returned); ``AssertionError`` naming ``what`` after
    ``timeout`` seconds, with the last value seen (or what ``show()`` says then)."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    seen = show() if show is not None else last
    raise AssertionError(f"not within {timeout:g} s: {what} (last seen: {seen!r})"[:3000])


def pods(plane: ControlPlane, namespace: str, selector: str | None = None) -> list[dict[str, Any]]:
    query = {"labelSelector": selector} if selector else {}
    return plane.api.items(PODS.format(ns=namespace), **query)


def podgangs(plane: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    return plane.api.items(PODGANGS.format(ns=namespace))


def bound(pod: dict[str, Any]) -> bool:
    return bool(pod["spec"].get("nodeName")) and not pod["metadata"].get("deletionTimestamp")


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (pod.get("status") or {}).get("conditions", []))


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c.get("type") == kind), None)


def gang_state(gang: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> tuple[int, int]:
    """(members bound, members referenced) of a PodGang, from the pods it lists."""
    names = [ref["name"] for group in gang["spec"]["podgroups"] for ref in group["podReferences"]]
    return sum(1 for n in names if n in by_name and bound(by_name[n])), len(names)


def all_whole(plane: ControlPlane, namespace: str, *, expected_gangs: int | None = None) -> bool:
    """Every PodGang of the namespace has every pod it lists bound (and there are ``expected_gangs`` of them)."""
    gangs = podgangs(plane, namespace)
    if not gangs or (expected_gangs is not None and len(gangs) != expected_gangs):
        return False
    by_name = {p["metadata"]["name"]: p for p in pods(plane, namespace)}
    return all(done == total for done, total in (gang_state(g, by_name) for g in gangs))


def nodes_by_name(plane: ControlPlane) -> dict[str, dict[str, Any]]:
    return {n["metadata"]["name"]: n for n in plane.api.items("/api/v1/nodes")}


def pack_violations(gang: dict[str, Any], by_name: dict[str, dict[str, Any]], nodes: dict[str, Any]) -> list[str]:
    """Required pack constraints (gang, group-config and group scope) that the bound pods break: all pods in a
    scope must share one value of the constraint's node-label key."""
    spec = gang["spec"]
    groups = {g["name"]: [r["name"] for r in g["podReferences"]] for g in spec["podgroups"]}
    scopes: list[tuple[str, list[str], dict[str, Any] | None]] = [
        ("gang", [n for names in groups.values() for n in names], spec.get("topologyConstraint"))
    ]
    for config in spec.get("topologyConstraintGroupConfigs") or []:
        members = [n for g in config["podGroupNames"] for n in groups.get(g, [])]
        scopes.append((f"config {config['name']}", members, config.get("topologyConstraint")))
    for group in spec["podgroups"]:
        scopes.append((f"group {group['name']}", groups[group["name"]], group.get("topologyConstraint")))
    broken = []
    for scope, members, constraint in scopes:
        key = ((constraint or {}).get("packConstraint") or {}).get("required")
        if not key:
            continue
        placed = [by_name[n]["spec"]["nodeName"] for n in members if n in by_name and bound(by_name[n])]
        values = {nodes[node]["metadata"]["labels"].get(key) for node in placed}
        if len(values) > 1 or None in values:
            broken.append(f"{gang['metadata']['name']} {scope}: {key} values {sorted(map(str, values))}")
    return broken


def apply_in(plane: ControlPlane, namespace: str, documents: Iterable[dict[str, Any]]) -> str:
    """``kubectl apply -f -`` of ``documents``, namespaced ones moved into ``namespace``."""
    moved = []
    for doc in documents:
        if doc.get("kind") != "ClusterTopologyBinding":
            doc = {**doc, "metadata": {**doc["metadata"], "namespace": namespace}}
        moved.append(doc)
    return plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(moved, sort_keys=False))


def clear_namespace(plane: ControlPlane, namespace: str) -> None:
    """Delete what a scenario made: its Grove objects, HPAs and Services, then every pod at once (grace 0, so no
    pod waits for a kubelet), until none is left and no init container of theirs runs."""
    for template in _CLEARED:
        plane.api.delete(template.format(ns=namespace))
    path = PODS.format(ns=namespace)
    plane.api.delete(path, gracePeriodSeconds=0)
    wait_for(lambda: not plane.api.items(path) or None, timeout=120, what=f"pods of {namespace} deleted")
    # The stand-in kubelet stops a deleted pod's init container as it sees the deletion: none may outlive the
    # scenario and meet the next one (its Role went with its PodCliqueSet).
    initc = f"initc-{namespace}-"
    wait_for(lambda: not any(c.name.startswith(initc) and c.alive() for c in plane.supervisor.children) or None,
             timeout=30, what=f"init containers of {namespace} stopped")  # fmt: skip
