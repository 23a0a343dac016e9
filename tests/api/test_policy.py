"""PodDisruptionBudgets as preemption reads them: which pods a selector covers, and how many evictions it allows."""

from __future__ import annotations

from typing import Any

import pytest

from api.policy import LabelSelector, PodDisruptionBudget


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        pytest.param({"matchLabels": {"app": "train"}}, {"app": "train", "x": "1"}, True, id="labels-match"),
        pytest.param({"matchLabels": {"app": "train"}}, {"app": "serve"}, False, id="labels-differ"),
        pytest.param({}, {"anything": "at all"}, True, id="empty-selects-all"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            {"tier": "b"},
            True,
            id="in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]}, {}, False, id="in-missing"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {}, True, id="notin-missing"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]},
            {"tier": "a"},
            False,
            id="notin-present",
        ),
        pytest.param({"matchExpressions": [{"key": "k", "operator": "Exists"}]}, {"k": ""}, True, id="exists"),
        pytest.param(
            {"matchExpressions": [{"key": "k", "operator": "DoesNotExist"}]}, {"k": ""}, False, id="does-not-exist"
        ),
        pytest.param(
            {"matchLabels": {"app": "train"}, "matchExpressions": [{"key": "k", "operator": "Exists"}]},
            {"app": "train"},
            False,
            id="all-must-hold",
        ),
    ],
)
def test_label_selectors(selector: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    assert LabelSelector.model_validate(selector).matches(labels) is expected


def _pdb(*, generation: int | None, observed: int | None, allowed: int, selector: Any = None) -> PodDisruptionBudget:
    body: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns", "generation": generation},
        "spec": {"selector": {"matchLabels": {"app": "train"}} if selector is None else selector},
        "status": {"disruptionsAllowed": allowed, "observedGeneration": observed},
    }
    return PodDisruptionBudget.model_validate(body)


def test_a_budget_allows_what_its_status_says_once_its_generation_is_observed() -> None:
    assert _pdb(generation=2, observed=2, allowed=3).allowed() == 3
    # Not processed yet by the disruption controller: kube-apiserver's eviction refuses every pod it covers.
    assert _pdb(generation=2, observed=1, allowed=3).allowed() == 0
    assert _pdb(generation=1, observed=None, allowed=3).allowed() == 0


def test_a_budget_covers_pods_of_its_namespace_matching_its_selector() -> None:
    budget = _pdb(generation=1, observed=1, allowed=1)
    assert budget.covers("ns", {"app": "train"})
    assert not budget.covers("other", {"app": "train"})
    assert not budget.covers("ns", {"app": "serve"})
    assert not PodDisruptionBudget.model_validate({"metadata": {"namespace": "ns"}}).covers("ns", {})
