"""The ``with-grove-operator`` overlay's routing on the real API server: applied over the standalone install
(``kubectl apply -k deploy/overlays/with-grove-operator``: the same base, plus the MutatingAdmissionPolicy), it routes
a pod created the way the Grove operator's default backend creates it (label ``grove.io/podgang``, ``schedulerName:
default-scheduler``) to the ``grove`` profile in an opted-in namespace, and leaves every other pod alone; the routed
gang is then bound whole by the grove profile and the extender. The policy is deleted again afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.install import DEPLOY
from benchmarks.controlplane.workload import Gang, create_gangs, pod_manifest
from tests.e2e.reads import all_whole, clear_namespace, wait_for

OPT_IN = {"grove-extender.io/gang-scheduling": "enabled"}
OVERLAY = DEPLOY / "overlays" / "with-grove-operator"


@pytest.fixture(scope="module", autouse=True)
def routing(control_plane: ControlPlane) -> Iterator[None]:
    """The overlay applied, and the policy in force: the API server loads a new policy a moment after it is stored,
    so a probe pod is created (server-side dry run, nothing stored) until it comes back routed."""
    plane = control_plane
    plane.kubectl("apply", "-k", str(OVERLAY))
    probe = "e2e-routing-probe"
    plane.ensure_namespace(probe, labels=OPT_IN)
    body = pod_manifest(Gang("x", 1, gpus=0, member=False), "probe", probe)
    body["metadata"]["labels"] = {"grove.io/podgang": "probe"}
    body["spec"]["schedulerName"] = "default-scheduler"
    path = f"/api/v1/namespaces/{probe}/pods"
    wait_for(lambda: plane.api.call("POST", path, body, dryRun="All")["spec"]["schedulerName"] == "grove" or None,
             timeout=60, what="the routing policy in force")  # fmt: skip
    try:
        yield
    finally:
        plane.kubectl("delete", "--ignore-not-found", "-f", str(OVERLAY / "grove-operator-routing.yaml"))


def _created(plane: ControlPlane, namespace: str, name: str, *, labels: dict[str, str], scheduler: str | None) -> str:
    body: dict[str, Any] = pod_manifest(Gang("x", 1, gpus=0, member=False), name, namespace)
    body["metadata"]["labels"] = labels
    if scheduler is None:
        del body["spec"]["schedulerName"]
    else:
        body["spec"]["schedulerName"] = scheduler
    created = plane.api.create(f"/api/v1/namespaces/{namespace}/pods", body)
    return str(created["spec"]["schedulerName"])


GANG = {"grove.io/podgang": "g"}
CASES = [
    # (opted-in namespace, labels, schedulerName asked for, schedulerName after admission)
    pytest.param(True, GANG, "default-scheduler", "grove", id="grove-pod-routed"),
    pytest.param(True, GANG, None, "grove", id="grove-pod-without-scheduler-name-routed"),
    pytest.param(False, GANG, "default-scheduler", "default-scheduler", id="namespace-not-opted-in"),
    pytest.param(True, {}, "default-scheduler", "default-scheduler", id="not-a-gang-pod"),
    pytest.param(True, GANG, "kai-scheduler", "kai-scheduler", id="another-grove-backend"),
]


@pytest.mark.parametrize(("opted_in", "labels", "asked", "expected"), CASES)
def test_the_routing_policy_sets_grove_only_on_gang_pods_of_opted_in_namespaces(
    control_plane: ControlPlane,
    namespace: str,
    opted_in: bool,
    labels: dict[str, str],
    asked: str | None,
    expected: str,
) -> None:
    if opted_in:
        control_plane.ensure_namespace(namespace, labels=OPT_IN)
    try:
        assert _created(control_plane, namespace, "p", labels=labels, scheduler=asked) == expected
    finally:
        clear_namespace(control_plane, namespace)  # before kube-scheduler places it anywhere


def test_a_gang_created_as_grove_creates_it_is_routed_and_bound_whole(
    control_plane: ControlPlane, namespace: str
) -> None:
    control_plane.ensure_namespace(namespace, labels=OPT_IN)
    create_gangs(control_plane.api, namespace, [Gang("routed", 4, scheduler="default-scheduler")])
    wait_for(lambda: all_whole(control_plane, namespace, expected_gangs=1), timeout=60, what="the routed gang whole")
