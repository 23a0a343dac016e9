"""The disruption-controller stand-in's arithmetic, as kube-controller-manager's disruption controller does it:
pods its selector covers, the healthy ones (Ready, not being deleted), what it asks for, what it allows."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.controlplane.disruption import budget_status


def _pod(name: str, *, app: str = "train", ready: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app": app}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


PODS = [_pod("a"), _pod("b"), _pod("c"), _pod("d", ready=False), _pod("e", deleting=True), _pod("x", app="serve")]


@pytest.mark.parametrize(
    ("spec", "allowed", "healthy", "expected"),
    [
        # 5 pods of app=train; a, b, c healthy (d not Ready, e being deleted). minAvailable 2: 3 - 2 = 1.
        pytest.param({"minAvailable": 2}, 1, 3, 5, id="min-available"),
        # maxUnavailable 1 of 5: desired 4 healthy, 3 are: none allowed.
        pytest.param({"maxUnavailable": 1}, 0, 3, 5, id="max-unavailable"),
        pytest.param({"minAvailable": 5}, 0, 3, 5, id="never-below-zero"),
    ],
)
def test_the_status_it_writes(spec: dict[str, Any], allowed: int, healthy: int, expected: int) -> None:
    budget = {
        "metadata": {"name": "p", "generation": 3},
        "spec": {**spec, "selector": {"matchLabels": {"app": "train"}}},
    }
    status = budget_status(budget, PODS)
    assert status["disruptionsAllowed"] == allowed
    assert (status["currentHealthy"], status["expectedPods"], status["observedGeneration"]) == (healthy, expected, 3)


def test_match_expressions_select_too() -> None:
    selector = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["serve"]}]}
    status = budget_status({"metadata": {"name": "p"}, "spec": {"minAvailable": 0, "selector": selector}}, PODS)
    assert (status["expectedPods"], status["disruptionsAllowed"]) == (1, 1)
