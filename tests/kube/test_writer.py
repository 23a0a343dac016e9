"""KubeClusterWriter against the fake API server: request shapes, effects, and errors a person can act on."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from scheduler.cluster_writer import WriteError
from scheduler.kube.connect import load_api_client
from scheduler.kube.writer import KubeClusterWriter
from tests.fakeapi import PODGANGS, PODS, FakeApiServer, running
from tests.kube import objects as k

FIXED_NOW = datetime(2026, 11, 25, 23, 0, 0, 250000, tzinfo=UTC)


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    with running(seed=k.gang_cluster(nodes=1, pods=16)) as server:
        yield server


@pytest.fixture
def writer(api_client: ApiClient) -> KubeClusterWriter:
    return KubeClusterWriter(api_client, instance="replica-a", timeout=(1.0, 1.0), clock=lambda: FIXED_NOW)


def uid_of(fake: FakeApiServer, name: str) -> str:
    pod = fake.get(PODS, name, "default")
    assert pod is not None
    return str(pod["metadata"]["uid"])


def test_bind_posts_a_binding_with_the_pod_uid(fake: FakeApiServer, writer: KubeClusterWriter) -> None:
    writer.bind(namespace="default", name="w-0", uid=uid_of(fake, "w-0"), node="gpu-0")
    bound = fake.get(PODS, "w-0", "default")
    assert bound is not None and bound["spec"]["nodeName"] == "gpu-0"
    (request,) = fake.requests_to("POST", r"^/api/v1/namespaces/default/pods/w-0/binding$")
    assert request.body["kind"] == "Binding"
    assert request.body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "gpu-0"}
    assert request.body["metadata"]["uid"] == uid_of(fake, "w-0")


def test_concurrent_binds_all_land(fake: FakeApiServer, writer: KubeClusterWriter) -> None:
    uids = {f"w-{i}": uid_of(fake, f"w-{i}") for i in range(16)}
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda n: writer.bind(namespace="default", name=n, uid=uids[n], node="gpu-0"), uids))
    assert all(p["spec"].get("nodeName") == "gpu-0" for p in fake.objects(PODS))


@pytest.mark.parametrize(
    ("name", "uid", "expected"),
    [
        pytest.param("gone", "", r"binding pod default/gone to node gpu-0: not found .*deleted", id="404-pod-gone"),
        pytest.param("w-1", "stale-uid", r"conflict .*Precondition failed", id="409-recreated-pod"),
    ],
)
def test_bind_errors_say_what_happened(writer: KubeClusterWriter, name: str, uid: str, expected: str) -> None:
    with pytest.raises(WriteError, match=expected):
        writer.bind(namespace="default", name=name, uid=uid, node="gpu-0")


def test_binding_an_already_bound_pod_is_a_conflict(fake: FakeApiServer, writer: KubeClusterWriter) -> None:
    writer.bind(namespace="default", name="w-2", uid="", node="gpu-0")
    with pytest.raises(WriteError, match=r'conflict .*already assigned to node "gpu-0"'):
        writer.bind(namespace="default", name="w-2", uid="", node="gpu-0")


def test_forbidden_names_the_rbac_fix(fake: FakeApiServer, writer: KubeClusterWriter) -> None:
    message = 'pods "w-3" is forbidden: User "system:serviceaccount:grove:grove-extender" cannot create pods/binding'
    fake.fail("POST", r"/binding$", 403, reason="Forbidden", message=message)
    with pytest.raises(WriteError, match=r"forbidden .*cannot create pods/binding.*deploy/extender-rbac.yaml"):
        writer.bind(namespace="default", name="w-3", uid="", node="gpu-0")


def test_a_slow_api_server_is_a_timeout_not_a_hang(fake: FakeApiServer, api_client: ApiClient) -> None:
    fake.delay("POST", r"/binding$", 1.0)
    quick = KubeClusterWriter(api_client, timeout=(0.5, 0.3))
    with pytest.raises(WriteError, match=r"did not answer within 0.3s"):
        quick.bind(namespace="default", name="w-4", uid="", node="gpu-0")


def test_an_unreachable_api_server(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with running() as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    kubeconfig.write_text(re.sub(r"http://127.0.0.1:\d+", f"http://127.0.0.1:{port}", kubeconfig.read_text()))
    client = load_api_client(str(kubeconfig))
    try:
        with pytest.raises(WriteError, match=r"cannot reach the API server"):
            KubeClusterWriter(client).bind(namespace="default", name="w-0", uid="", node="gpu-0")
    finally:
        client.close()


def test_status_is_merge_patched_on_the_subresource(fake: FakeApiServer, writer: KubeClusterWriter) -> None:
    gang = fake.get(PODGANGS, "g", "default")
    assert gang is not None
    gang["status"] = {"phase": "Pending", "conditions": [{"type": "Initialized", "status": "True"}]}
    fake.put(PODGANGS, gang)
    writer.patch_podgang_status(namespace="default", name="g", status={"phase": "Starting", "placementScore": 0.75})
    (request,) = fake.requests_to("PATCH", r"^/apis/scheduler.grove.io/v1alpha1/namespaces/default/podgangs/g/status$")
    assert request.headers["content-type"] == "application/merge-patch+json"
    assert request.body == {"status": {"phase": "Starting", "placementScore": 0.75}}
    updated = fake.get(PODGANGS, "g", "default")
    assert updated is not None
    assert updated["status"] == {
        "phase": "Starting",
        "placementScore": 0.75,
        "conditions": [{"type": "Initialized", "status": "True"}],  # untouched: not in the patch
    }
    assert updated["spec"] == gang["spec"]


def test_status_of_a_missing_podgang(writer: KubeClusterWriter) -> None:
    with pytest.raises(WriteError, match=r"updating status of PodGang default/nope: not found"):
        writer.patch_podgang_status(namespace="default", name="nope", status={"phase": "Running"})


def test_events_are_core_v1_events_about_the_object(fake: FakeApiServer, writer: KubeClusterWriter) -> None:
    for _ in range(2):
        writer.record_event(
            namespace="default",
            kind="PodGang",
            name="g",
            uid="gang-uid",
            reason="GangScheduled",
            message="8 pods bound inside nvidia.com/gpu.clique=cluster-1.0",
        )
    events = fake.objects("v1/events")
    assert len(events) == 2, "two events in the same instant must not collide on name"
    event = events[0]
    assert event["involvedObject"] == {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "name": "g",
        "namespace": "default",
        "uid": "gang-uid",
    }
    assert (event["reason"], event["type"]) == ("GangScheduled", "Normal")
    assert event["source"] == {"component": "grove-extender"}
    assert event["reportingInstance"] == "replica-a"
    assert datetime.fromisoformat(event["firstTimestamp"]) == FIXED_NOW.replace(microsecond=0)
    assert event["metadata"]["name"].startswith("g.")
