"""``deploy/overlays/with-grove-operator/grove-operator-routing.yaml`` on the real API server: the
MutatingAdmissionPolicy routes a pod created the way the Grove operator's default backend creates it (label
``grove.io/podgang``, ``schedulerName: default-scheduler``) to the ``grove`` profile in an opted-in namespace, and
leaves every other pod alone; the routed gang is then bound whole by the grove profile and the extender."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.workload import Gang, create_gangs, pod_manifest
from tests.e2e.reads import all_whole, clear_namespace, wait_for

OPT_IN = {"grove-extender.io/gang-scheduling": "enabled"}


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
