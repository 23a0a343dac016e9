"""``deploy/reconciler/reconciler-ownership-policy.yaml``: its CEL evaluated (cel-python) the way kube-apiserver
evaluates a ValidatingAdmissionPolicy — matchConditions, then variables, then validations — on requests by the
reconciler and by others; its kinds held to what the reconciler writes. ``make e2e`` shows the real API server
agreeing (tests/e2e/test_reconciler_scope.py)."""

from __future__ import annotations

from typing import Any

import pytest

from api.grove import LABEL_MANAGED_BY, MANAGED_BY
from scheduler.reconcile.client import OwnedKind
from scheduler.reconcile.rest_client import _COLLECTIONS
from tests.deploy.admission_policy import admitted, load
from tests.deploy.test_reconciler import DEPLOY

RECONCILER = "system:serviceaccount:grove-system:grove-reconciler"


def _policy() -> tuple[dict[str, Any], dict[str, Any]]:
    return load(DEPLOY / "reconciler" / "reconciler-ownership-policy.yaml")


def _admitted(*, user: str, operation: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> bool:
    return admitted(_policy()[0], user=user, operation=operation, old=old, new=new)


def _pod(labels: dict[str, str] | None) -> dict[str, Any]:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"}}
    if labels is not None:
        pod["metadata"]["labels"] = labels
    return pod


OURS = {LABEL_MANAGED_BY: MANAGED_BY, "app.kubernetes.io/part-of": "pcs"}
CASES = [
    # (user, operation, old labels, new labels, admitted); None: no object on that side, {}: no labels
    pytest.param(RECONCILER, "CREATE", None, OURS, True, id="creates-its-own"),
    pytest.param(RECONCILER, "CREATE", None, {}, False, id="creates-unlabelled"),
    pytest.param(RECONCILER, "CREATE", None, {LABEL_MANAGED_BY: "helm"}, False, id="creates-someone-elses"),
    pytest.param(RECONCILER, "UPDATE", OURS, OURS, True, id="patches-its-own"),
    pytest.param(RECONCILER, "UPDATE", {"app": "web"}, {"app": "web"}, False, id="patches-a-users-pod"),
    pytest.param(RECONCILER, "UPDATE", None, None, False, id="patches-a-pod-with-no-labels"),
    pytest.param(RECONCILER, "UPDATE", {}, OURS, False, id="relabels-a-foreign-pod-into-ours"),
    pytest.param(RECONCILER, "DELETE", OURS, None, True, id="deletes-its-own"),
    pytest.param(RECONCILER, "DELETE", {"app": "web"}, None, False, id="deletes-a-users-pod"),
    pytest.param("system:serviceaccount:kube-system:generic-garbage-collector", "DELETE", {}, None, True,
                 id="others-are-not-judged"),
    pytest.param("system:serviceaccount:grove-system:grove-extender", "UPDATE", {}, {}, True, id="not-the-extender"),
]  # fmt: skip


@pytest.mark.parametrize(("user", "operation", "old", "new", "admitted"), CASES)
def test_the_reconciler_may_write_only_what_is_labelled_its_own(
    user: str, operation: str, old: dict[str, str] | None, new: dict[str, str] | None, admitted: bool
) -> None:
    def side(labels: dict[str, str] | None, present: bool) -> dict[str, Any] | None:
        return _pod(labels or None) if present else None

    old_object = side(old, operation != "CREATE")
    new_object = side(new, operation != "DELETE")
    assert _admitted(user=user, operation=operation, old=old_object, new=new_object) is admitted


def test_it_judges_exactly_the_kinds_the_reconciler_labels_and_writes_but_grove_s_own() -> None:
    policy, binding = _policy()
    assert (policy["apiVersion"], policy["kind"]) == ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy")
    assert policy["spec"]["failurePolicy"] == "Fail"
    judged = {
        (group, resource)
        for rule in policy["spec"]["matchConstraints"]["resourceRules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert all(
        set(r["operations"]) == {"CREATE", "UPDATE", "DELETE"}
        for r in policy["spec"]["matchConstraints"]["resourceRules"]
    )
    # Every kind the reconciler creates, replaces or deletes (OwnedKind, and the Secret it creates) outside Grove's
    # own API groups (whose objects are the reconciler's by definition) and the NVIDIA driver's (MNNVL, optional).
    kinds: tuple[OwnedKind | str, ...] = (*OwnedKind.__args__, "Secret")  # type: ignore[attr-defined]
    written = set()
    for kind in kinds:
        prefix, resource = _COLLECTIONS[kind]
        group = "" if prefix == "/api/v1" else prefix.removeprefix("/apis/").rsplit("/", 1)[0]
        if group not in ("grove.io", "scheduler.grove.io", "resource.nvidia.com"):
            written.add((group, resource))
    assert judged == written
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    (condition,) = policy["spec"]["matchConditions"]
    assert RECONCILER in condition["expression"]
