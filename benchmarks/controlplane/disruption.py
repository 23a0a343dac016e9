"""A disruption-controller stand-in: it writes PodDisruptionBudget status as kube-controller-manager's disruption
controller does. There is none here, and without one kube-apiserver's Eviction API refuses every pod a budget
covers ("the disruption budget is still being processed by the server"): a budget that allows some evictions could
not be shown to.

As the real controller, for each budget: the pods of its namespace its selector matches (``expectedPods``), those
Ready and not being deleted (``currentHealthy``), the healthy count it asks for (``desiredHealthy``: ``minAvailable``,
or the pods less ``maxUnavailable``; integers only, percentages are not needed here), ``disruptionsAllowed`` (the
difference, never below zero) and ``observedGeneration``. The Eviction API decrements ``disruptionsAllowed`` itself
on every eviction it lets through; a pod going not-Ready or being deleted then brings the count here again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from benchmarks.controlplane.agents import Agent, Handler
from benchmarks.controlplane.rest import Api

__all__ = ["DisruptionController", "budget_status"]

PDBS = "/apis/policy/v1/poddisruptionbudgets"


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for term in selector.get("matchExpressions") or []:
        key, operator, values = term["key"], term["operator"], term.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _healthy(pod: dict[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def budget_status(budget: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    """The status the disruption controller writes for ``budget`` over ``pods`` (every pod of its namespace)."""
    spec = budget.get("spec") or {}
    covered = [p for p in pods if _selects(spec.get("selector"), p["metadata"].get("labels") or {})]
    healthy = sum(1 for p in covered if _healthy(p))
    if "minAvailable" in spec:
        desired = int(spec["minAvailable"])
    else:
        desired = max(0, len(covered) - int(spec.get("maxUnavailable", 0)))
    return {
        "observedGeneration": budget["metadata"].get("generation", 1),
        "disruptionsAllowed": max(0, healthy - desired),
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": len(covered),
    }


class DisruptionController(Agent):
    name = "disruption-controller"

    def __init__(self, api: Api) -> None:
        super().__init__(api)
        self._budgets: dict[tuple[str, str], dict[str, Any]] = {}
        self._pods: dict[str, dict[str, dict[str, Any]]] = {}  # namespace → pod name → pod
        self._dirty: set[str] = set()  # namespaces whose budgets need their status written again
        self._writer: asyncio.Task[Any] | None = None

    def watches(self) -> list[tuple[str, dict[str, str], Handler]]:
        return [(PDBS, {}, self._budget), ("/api/v1/pods", {}, self._pod)]

    def _budget(self, kind: str, budget: dict[str, Any]) -> None:
        meta = budget["metadata"]
        key = (meta["namespace"], meta["name"])
        if kind == "DELETED":
            self._budgets.pop(key, None)
            return
        self._budgets[key] = budget
        self._touch(meta["namespace"])

    def _pod(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        namespace = self._pods.setdefault(meta["namespace"], {})
        if kind == "DELETED":
            namespace.pop(meta["name"], None)
        else:
            namespace[meta["name"]] = pod
        if any(ns == meta["namespace"] for ns, _ in self._budgets):
            self._touch(meta["namespace"])

    def _touch(self, namespace: str) -> None:
        self._dirty.add(namespace)
        if self._writer is None or self._writer.done():
            self._writer = self.spawn(self._write())

    async def _write(self) -> None:
        """Write the dirty namespaces' budgets, a tenth of a second after the first change (changes come in
        bursts: a gang's pods bind together)."""
        assert self.client is not None
        await asyncio.sleep(0.1)
        while self._dirty:
            namespace = self._dirty.pop()
            pods = list(self._pods.get(namespace, {}).values())
            for (ns, name), budget in list(self._budgets.items()):
                if ns != namespace:
                    continue
                status = budget_status(budget, pods)
                if all((budget.get("status") or {}).get(k) == v for k, v in status.items()):
                    continue
                path = f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}/status"
                reply = await self.client.arequest(
                    "PATCH", path, {"status": status}, content_type="application/merge-patch+json"
                )
                if reply.status >= 400 and reply.status != 404:
                    self.errors.append(f"status of PodDisruptionBudget {ns}/{name}: HTTP {reply.status}")
