"""The install puts the scheduling path's requests in the schedulers' priority level: kube-apiserver v1.36 tells, on
every answer, which FlowSchema and priority level it classified the request into (``X-Kubernetes-PF-*`` headers);
the grove kube-scheduler's and the extender's accounts must land in ``workload-high``, as the default kube-scheduler
does, and another account of the namespace must not."""

from __future__ import annotations

import ssl
import urllib.request

import pytest

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.tokens import request_token

pytestmark = pytest.mark.e2e


def _classified(plane: ControlPlane, account: str) -> tuple[str, str]:
    """(FlowSchema UID, priority level UID) of a GET sent as ServiceAccount ``grove-system/<account>``."""
    token = request_token(plane.api, namespace="grove-system", account=account)
    context = ssl.create_default_context(cafile=str(plane.server.keys.ca))
    request = urllib.request.Request(
        f"{plane.server.url}/api/v1/namespaces/grove-system/pods?limit=1", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as reply:
            headers = reply.headers
    except urllib.error.HTTPError as refused:  # a 403 is classified too: the headers are there either way
        headers = refused.headers
    return headers["X-Kubernetes-PF-FlowSchema-UID"], headers["X-Kubernetes-PF-PriorityLevel-UID"]


def test_the_scheduling_paths_requests_are_in_the_schedulers_priority_level(control_plane: ControlPlane) -> None:
    plane = control_plane
    schema = plane.api.get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/grove-scheduling")
    level = plane.api.get("/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/workload-high")
    for account in ("grove-extender", "grove-scheduler"):
        assert _classified(plane, account) == (schema["metadata"]["uid"], level["metadata"]["uid"]), account
    other = plane.api.create(
        "/api/v1/namespaces/grove-system/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "e2e-bystander"}},
    )
    try:
        assert _classified(plane, "e2e-bystander")[0] != schema["metadata"]["uid"]
    finally:
        plane.api.request("DELETE", f"/api/v1/namespaces/grove-system/serviceaccounts/{other['metadata']['name']}")
