"""``deploy/base/extender-status-policy.yaml``: the extender's account may change a pod's ``status.nominatedNodeName``
and no other field of its status; its CEL evaluated as kube-apiserver evaluates it (``tests/deploy/admission_policy``),
on requests by the extender and by others. ``make e2e`` shows the real API server agreeing
(tests/e2e/test_nominations.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.admission_policy import admitted, load
from tests.deploy.test_reconciler import DEPLOY

EXTENDER = "system:serviceaccount:grove-system:grove-extender"
POLICY, BINDING = load(DEPLOY / "base" / "extender-status-policy.yaml")
RUNNING = {
    "phase": "Running",
    "conditions": [{"type": "Ready", "status": "True"}],
    "podIP": "10.0.0.7",
    "containerStatuses": [{"name": "worker", "ready": True, "restartCount": 0}],
}


def _pod(status: dict[str, Any] | None) -> dict[str, Any]:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"}}
    if status is not None:
        pod["status"] = status
    return pod


CASES = [
    # (user, status before, status after, admitted)
    pytest.param(EXTENDER, {"phase": "Pending"}, {"phase": "Pending", "nominatedNodeName": "n1"}, True, id="nominates"),
    pytest.param(EXTENDER, {"phase": "Pending", "nominatedNodeName": "n1"}, {"phase": "Pending"}, True, id="clears"),
    pytest.param(EXTENDER, {"nominatedNodeName": "n1"}, {"nominatedNodeName": "n2"}, True, id="moves"),
    pytest.param(EXTENDER, None, {"nominatedNodeName": "n1"}, True, id="nominates-a-pod-with-no-status"),
    pytest.param(EXTENDER, RUNNING, RUNNING, True, id="changes-nothing"),
    pytest.param(EXTENDER, RUNNING, {**RUNNING, "conditions": []}, False, id="drops-a-condition"),
    pytest.param(EXTENDER, {"phase": "Pending"}, {"phase": "Running"}, False, id="sets-the-phase"),
    pytest.param(EXTENDER, {"phase": "Pending"}, {"phase": "Pending", "podIP": "10.0.0.8"}, False, id="adds-an-ip"),
    pytest.param(EXTENDER, RUNNING, {k: v for k, v in RUNNING.items() if k != "podIP"}, False, id="removes-an-ip"),
    pytest.param(
        EXTENDER,
        {"phase": "Pending"},
        {"phase": "Pending", "nominatedNodeName": "n1", "reason": "Preempting"},
        False,
        id="nominates-and-sets-a-reason",
    ),
    pytest.param("system:node:n1", {"phase": "Pending"}, {"phase": "Running"}, True, id="the-kubelet-is-not-judged"),
    pytest.param(
        "system:kube-scheduler", {"phase": "Pending"}, {"nominatedNodeName": "n1"}, True, id="kube-scheduler-neither"
    ),
]


@pytest.mark.parametrize(("user", "before", "after", "admitted_"), CASES)
def test_the_extender_may_change_the_nominated_node_and_nothing_else_of_a_pods_status(
    user: str, before: dict[str, Any] | None, after: dict[str, Any], admitted_: bool
) -> None:
    verdict = admitted(POLICY, user=user, operation="UPDATE", old=_pod(before), new=_pod(after))
    assert verdict is admitted_


def test_it_judges_pod_status_writes_alone_and_denies_when_it_cannot_tell() -> None:
    assert (POLICY["apiVersion"], POLICY["kind"]) == ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy")
    assert POLICY["spec"]["failurePolicy"] == "Fail"
    assert POLICY["spec"]["matchConstraints"]["resourceRules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods/status"]}
    ]
    assert BINDING["spec"] == {"policyName": POLICY["metadata"]["name"], "validationActions": ["Deny"]}
    (condition,) = POLICY["spec"]["matchConditions"]
    assert EXTENDER in condition["expression"]


def test_every_status_field_the_pod_api_has_is_compared() -> None:
    """The fields Kubernetes v1.36's PodStatus has (from the kubernetes client's model, the nearest to it installed),
    but the one the extender writes, are all in the validation's list: a field left out could be rewritten."""
    from kubernetes.client import V1PodStatus

    listed = POLICY["spec"]["validations"][0]["expression"]
    fields = set(V1PodStatus.attribute_map.values()) - {"nominatedNodeName"}
    missing = sorted(field for field in fields if f"'{field}'" not in listed)
    assert not missing, f"status fields the policy does not compare: {missing}"
