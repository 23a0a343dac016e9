"""Routing Grove-operator pods to the extender: the shipped MutatingAdmissionPolicy's CEL evaluated (cel-python)
against sample pods, its shape against the admissionregistration.k8s.io/v1 schema, and the default scheduler's
preempt-only extender entry held to exactly its settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import celpy
import lark
import pytest
import yaml

from tests.conftest import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _policy() -> tuple[dict[str, Any], dict[str, Any]]:
    policy, binding = _documents(DEPLOY / "overlays/with-grove-operator/grove-operator-routing.yaml")
    return policy, binding


def _pod(*, labels: dict[str, str] | None, scheduler: str | None) -> dict[str, Any]:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"},
                           "spec": {"containers": [{"name": "c", "image": "i"}]}}  # fmt: skip
    if labels is not None:
        pod["metadata"]["labels"] = labels
    if scheduler is not None:
        pod["spec"]["schedulerName"] = scheduler
    return pod


def _matches(pod: dict[str, Any]) -> bool:
    """kube-apiserver's rule: the policy applies when every matchCondition evaluates to true."""
    policy, _ = _policy()
    env = celpy.Environment()
    activation = {"object": celpy.json_to_cel(pod)}
    results = [
        env.program(env.compile(c["expression"])).evaluate(activation) for c in policy["spec"]["matchConditions"]
    ]
    assert all(isinstance(r, celpy.celtypes.BoolType) for r in results), results  # an error would be a non-bool
    return all(results)


@pytest.mark.parametrize(
    ("labels", "scheduler", "mutated"),
    [
        pytest.param({"grove.io/podgang": "pcs-0"}, "default-scheduler", True, id="grove-default-backend-pod"),
        pytest.param({"grove.io/podgang": "pcs-0"}, None, True, id="gang-pod-no-scheduler-name"),
        pytest.param({"grove.io/podgang": "pcs-0"}, "", True, id="gang-pod-empty-scheduler-name"),
        pytest.param({"grove.io/podgang": "pcs-0"}, "kai-scheduler", False, id="grove-kai-backend-left-alone"),
        pytest.param({"grove.io/podgang": "pcs-0"}, "grove", False, id="already-grove"),
        pytest.param({"app": "web"}, "default-scheduler", False, id="not-a-gang-pod"),
        pytest.param(None, None, False, id="no-labels-at-all"),
    ],
)
def test_match_conditions_select_groves_default_backend_gang_pods(
    labels: dict[str, str] | None, scheduler: str | None, mutated: bool
) -> None:
    assert _matches(_pod(labels=labels, scheduler=scheduler)) is mutated


def _constructions(tree: lark.Tree) -> list[tuple[str, list[str]]]:
    """Each typed object construction ``Type{field: …}`` in a CEL parse tree: (type, fields)."""
    found = []
    for node in tree.iter_subtrees_topdown():
        if node.data == "member_object":
            type_name = ".".join(str(t) for t in node.children[0].scan_values(lambda v: isinstance(v, lark.Token)))
            inits = node.children[1]
            fields = [str(c) for c in inits.children if isinstance(c, lark.Token) and c.type == "IDENT"]
            found.append((type_name, fields))
    return found


def test_mutation_applies_exactly_scheduler_name_grove() -> None:
    policy, _ = _policy()
    (mutation,) = policy["spec"]["mutations"]
    assert mutation["patchType"] == "ApplyConfiguration"
    tree = celpy.Environment().compile(mutation["applyConfiguration"]["expression"])  # parses as CEL
    # Object{spec: Object.spec{schedulerName: "grove"}}: server-side apply of that one field, nothing else.
    assert _constructions(tree) == [("Object", ["spec"]), ("Object.spec", ["schedulerName"])]
    literals = [str(t) for t in tree.scan_values(lambda v: isinstance(v, lark.Token) and v.type == "STRING_LIT")]
    assert literals == ['"grove"']


def test_policy_and_binding_have_the_v1_shape_and_scope_by_namespace() -> None:
    policy, binding = _policy()
    assert (policy["apiVersion"], policy["kind"]) == ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy")
    spec = policy["spec"]
    assert spec["failurePolicy"] in ("Fail", "Ignore") and spec["reinvocationPolicy"] in ("Never", "IfNeeded")
    (rule,) = spec["matchConstraints"]["resourceRules"]
    assert rule == {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
    assert all(set(c) == {"name", "expression"} for c in spec["matchConditions"])
    assert (binding["apiVersion"], binding["kind"]) == (
        "admissionregistration.k8s.io/v1",
        "MutatingAdmissionPolicyBinding",
    )
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    selector = binding["spec"]["matchResources"]["namespaceSelector"]
    assert selector == {"matchLabels": {"grove-extender.io/gang-scheduling": "enabled"}}


def test_default_scheduler_block_routes_only_gpu_preemptions_to_the_guard() -> None:
    (configmap,) = _documents(DEPLOY / "components/preempt-guard/default-scheduler-preempt-guard.yaml")
    assert configmap["kind"] == "ConfigMap"
    config = yaml.safe_load(configmap["data"]["scheduler-config.yaml"])
    assert (config["apiVersion"], config["kind"]) == ("kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration")
    (extender,) = config["extenders"]
    assert extender == {
        "urlPrefix": extender["urlPrefix"],
        "enableHTTPS": True,  # the extender serves its verbs over mTLS only (tests/deploy/test_security.py)
        "tlsConfig": {key: extender["tlsConfig"][key] for key in ("certFile", "keyFile", "caFile")},
        "preemptVerb": "preempt",
        "managedResources": [{"name": "nvidia.com/gpu", "ignoredByScheduler": False}],
        "ignorable": True,
        "nodeCacheCapable": True,
    }
    scheduler = next(
        d for d in _documents(DEPLOY / "base/grove-scheduler.yaml") if d.get("kind") == "ConfigMap"
    )  # the grove profile's own extender: the same service
    grove_config = yaml.safe_load(next(iter(scheduler["data"].values())))
    assert extender["urlPrefix"] == grove_config["extenders"][0]["urlPrefix"]
    assert extender["enableHTTPS"] == grove_config["extenders"][0]["enableHTTPS"]
