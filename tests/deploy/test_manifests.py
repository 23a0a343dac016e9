"""The manifests in deploy/: they parse, and they keep the invariants the design depends on."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from api.grove import PodGang
from scheduler.extender.coordinator.gang_state import GroupCount
from scheduler.extender.coordinator.status import partially_bound_status, scheduled_status, unscheduled_status
from scheduler.snapshot import load_snapshot
from tests.conftest import REPO_ROOT
from tests.crd_schema import violations
from tests.deploy.manifests import DEPLOY, documents, extender_args, find, scheduler_config
from tests.kube import objects as k

# (apiGroup, resource) → verbs: exactly what the extender calls, nothing more (see scheduler/kube/).
EXTENDER_PERMISSIONS = {
    ("", "pods"): {"get", "list", "watch"},
    ("", "pods/binding"): {"create"},
    ("", "pods/status"): {"patch"},  # nominatedNodeName only
    ("", "pods/eviction"): {"create"},  # lower-priority pods evicted for a gang, never deleted directly
    ("scheduling.k8s.io", "priorityclasses"): {"list", "watch"},  # what a PodGang's priorityClassName means
    ("policy", "poddisruptionbudgets"): {"list", "watch"},  # how many victims an eviction may take
    ("", "nodes"): {"get", "list", "watch"},
    ("", "events"): {"create"},
    ("scheduler.grove.io", "podgangs"): {"get", "list", "watch"},
    ("scheduler.grove.io", "podgangs/status"): {"patch"},
    ("coordination.k8s.io", "leases"): {"get", "create", "update"},
}


def go_seconds(duration: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", duration)
    assert match, f"not a Go duration this test understands: {duration}"
    return float(match[1]) * {"ms": 0.001, "s": 1, "m": 60}[match[2]]


def test_every_manifest_parses_and_names_itself() -> None:
    docs = documents()
    assert len(docs) >= 10
    for path, doc in docs:
        assert doc.get("apiVersion") and doc.get("kind") and doc.get("metadata", {}).get("name"), path


def test_extender_rbac_is_exactly_least_privilege() -> None:
    granted: dict[tuple[str, str], set[str]] = {}
    for kind, name in (("ClusterRole", "grove-extender"), ("Role", "grove-extender-lease")):
        for rule in find(kind, name)["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    assert "*" not in (group, resource, *rule["verbs"]), "no wildcards"
                    granted.setdefault((group, resource), set()).update(rule["verbs"])
    assert granted == EXTENDER_PERMISSIONS
    assert find("ClusterRole", "grove-extender")["rules"], "bound below"
    for kind, name in (("ClusterRoleBinding", "grove-extender"), ("RoleBinding", "grove-extender-lease")):
        binding = find(kind, name)
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "grove-extender", "namespace": "grove-system"}
        ]
    lease_rules = find("Role", "grove-extender-lease")["rules"]
    named = [r for r in lease_rules if set(r["verbs"]) & {"get", "update"}]
    assert all(r.get("resourceNames") == ["grove-extender"] for r in named), "only its own Lease"


def test_scheduler_config_routes_by_profile_to_the_extender() -> None:
    config = scheduler_config()
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in config["profiles"]] == ["grove"]
    assert config["percentageOfNodesToScore"] == 100
    (extender,) = config["extenders"]
    assert "managedResources" not in extender, "CPU-only gang members would never reach the extender"
    assert {extender[f"{verb}Verb"] for verb in ("filter", "prioritize", "bind", "preempt")} == {
        "filter",
        "prioritize",
        "bind",
        "preempt",
    }
    assert extender["nodeCacheCapable"] is True
    assert extender["ignorable"] is False
    service = find("Service", "grove-extender")
    port = service["spec"]["ports"][0]["port"]
    assert extender["urlPrefix"] == f"https://grove-extender.{service['metadata']['namespace']}.svc:{port}"


def test_bind_wait_is_well_below_the_scheduler_http_timeout() -> None:
    http_timeout = go_seconds(scheduler_config()["extenders"][0]["httpTimeout"])
    # Room for the answer to travel back and for the API server's own latency: at most half the timeout.
    assert float(extender_args()["bind-wait"]) <= http_timeout / 2


def test_second_scheduler_has_its_own_lease_and_the_scheduler_roles() -> None:
    election = scheduler_config()["leaderElection"]
    assert election["leaderElect"] is True
    assert election["resourceName"] not in ("kube-scheduler", "grove-extender"), "never contend with another lock"
    lease_role = find("Role", "grove-scheduler-lease")
    assert lease_role["metadata"]["namespace"] == election["resourceNamespace"]
    # Only get/update on its own Lease: system:kube-scheduler already grants `create` on any (make e2e showed a
    # create rule here was never needed).
    assert lease_role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [election["resourceName"]],
            "verbs": ["get", "update"],
        }
    ]
    roles = {
        doc["roleRef"]["name"]
        for _, doc in documents()
        if doc["kind"] == "ClusterRoleBinding" and doc["subjects"][0]["name"] == "grove-scheduler"
    }
    assert roles == {"system:kube-scheduler", "system:volume-scheduler"}


def test_extender_deployment_runs_two_replicas_with_probes() -> None:
    deployment = find("Deployment", "grove-extender")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert deployment["spec"]["replicas"] == 2
    assert pod["serviceAccountName"] == "grove-extender"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"  # on the probe port: test_security.py
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["args"][0] == "serve" and "--in-cluster" in container["args"]
    assert extender_args()["lease-namespace"] == "$(POD_NAMESPACE)"
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_dockerfile_is_slim_non_root_with_the_cli_as_entrypoint() -> None:
    lines = [line.strip() for line in (DEPLOY / "Dockerfile").read_text().splitlines()]
    # The base image is a build argument (a release build passes a digest: tests/repo/test_requirements_lock.py).
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in lines and "FROM ${PYTHON_IMAGE}" in lines
    user = next(line for line in lines if line.startswith("USER "))
    assert not user.split()[1].startswith(("root", "0"))
    assert 'ENTRYPOINT ["grove-extender"]' in lines


# --- the PodGang CRD --------------------------------------------------------------------------------------------


def crd_schema() -> dict[str, Any]:
    crd = find("CustomResourceDefinition", "podgangs.scheduler.grove.io")
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def test_crd_is_grove_shaped() -> None:
    crd = find("CustomResourceDefinition", "podgangs.scheduler.grove.io")
    (version,) = crd["spec"]["versions"]
    assert crd["spec"]["scope"] == "Namespaced" and crd["spec"]["names"]["shortNames"] == ["pg"]
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == ["Phase", "Age"]
    spec = crd_schema()["properties"]["spec"]
    group = spec["properties"]["podgroups"]["items"]
    assert set(group["required"]) == {"name", "podReferences", "minReplicas"}
    assert {"podReferences", "minReplicas", "topologyConstraint"} <= set(group["properties"])
    assert {"topologyConstraint", "topologyConstraintGroupConfigs"} <= set(spec["properties"])
    assert crd_schema()["properties"]["status"]["properties"]["placementScore"]["type"] == "number"


GROVE_INITIALIZED = {  # what the Grove operator writes once all pods exist
    "type": "Initialized",
    "status": "True",
    "reason": "PodGangPodsCreated",
    "message": "all pods of the PodGang have been created",
    "lastTransitionTime": "2026-11-25T23:00:00Z",
}


def test_topology_binding_crd_accepts_what_the_reconciler_reads() -> None:
    crd = find("CustomResourceDefinition", "clustertopologybindings.grove.io")
    assert crd["spec"]["scope"] == "Cluster" and crd["spec"]["names"]["shortNames"] == ["ct"]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    binding = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": "grove-topology"},
        "spec": {"levels": [{"domain": "rack", "key": "nvidia.com/gpu.clique"}, {"domain": "host", "key": "h"}]},
    }
    assert violations(binding, schema) == []
    assert violations({**binding, "spec": {}}, schema) == [".spec.levels: required"]


def podgangs_to_validate() -> list[dict[str, Any]]:
    demo = load_snapshot(REPO_ROOT / "benchmarks" / "snapshots" / "demo.json").podgangs
    assert demo, "the demo snapshot has PodGangs to check"
    gangs = [g.to_json_dict() for g in demo] + [k.podgang("t", pods=["a", "b"], min_replicas=1)]
    # The status our writer patches in starts from what the API holds: Grove's own condition.
    return [{**gang, "status": {"phase": "Pending", "conditions": [GROVE_INITIALIZED]}} for gang in gangs]


@pytest.mark.parametrize("gang", podgangs_to_validate(), ids=lambda g: g["metadata"]["name"])
def test_real_podgangs_and_our_status_writes_validate(gang: dict[str, Any]) -> None:
    status = scheduled_status(PodGang.model_validate(gang), placement_score=0.8, now=datetime.now(UTC))
    assert [c["type"] for c in status["conditions"]] == ["Initialized", "Scheduled"]
    assert violations({**gang, "status": status}, crd_schema()) == []


def _merged(gang: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """The object after a merge patch of its status (``conditions`` replaced whole, other keys kept)."""
    return {**gang, "status": {**(gang.get("status") or {}), **status}}


@pytest.mark.parametrize("grove_wrote", [False, True], ids=["status-not-written-yet", "grove-pending"])
def test_every_status_write_validates_also_before_grove_wrote_a_phase(grove_wrote: bool) -> None:
    # Divergence found on a real kube-apiserver: a PartiallyBound condition patched onto a PodGang with no status yet
    # was refused ("status.phase: Required value"); the fake API server took it.
    gang = k.podgang("t", pods=["a", "b"], min_replicas=2)
    if grove_wrote:
        gang["status"] = {"phase": "Pending", "conditions": [GROVE_INITIALIZED]}
    now = datetime.now(UTC)
    podgang = PodGang.model_validate(gang)
    writes = [
        partially_bound_status(podgang, counts=[GroupCount("w", bound=1, ready=0, min_replicas=2)], now=now),
        unscheduled_status(podgang, reason="", now=now),
        scheduled_status(podgang, placement_score=1.0, now=now),
    ]
    for status in writes:
        assert violations(_merged(gang, status), crd_schema()) == [], status
    assert writes[0]["phase"] == "Pending"


def test_the_validator_can_fail() -> None:
    broken = k.podgang("t", pods=["a"])
    del broken["spec"]["podgroups"][0]["minReplicas"]
    broken["status"] = {"conditions": [{"type": "Scheduled", "status": "Maybe"}]}
    found = violations(broken, crd_schema())
    assert ".spec.podgroups[0].minReplicas: required" in found
    assert ".status.phase: required" in found
    assert any("not in" in v for v in found)
