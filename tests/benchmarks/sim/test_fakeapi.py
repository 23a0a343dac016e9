"""The fake API server keeps the kube-apiserver rules tests lean on: if it drifted, tests of our clients would
pass against behaviour no cluster has. Raw HTTP here, so nothing of ours sits between the test and the fake."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from benchmarks.sim.fakeapi import PODGANGS, PODS, FakeApiServer, running
from tests.kube import objects as k

POD = "/api/v1/namespaces/default/pods"
GANG = "/apis/scheduler.grove.io/v1alpha1/namespaces/default/podgangs"
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    with running() as server:
        yield server


@pytest.fixture
def http(fake: FakeApiServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fake.url, timeout=5) as client:
        yield client


def _status(response: httpx.Response) -> tuple[int, str]:
    body = response.json()
    assert body["kind"] == "Status" and body["code"] == response.status_code
    return response.status_code, body["reason"]


def test_create_names_checks_and_refuses_like_the_apiserver(http: httpx.Client) -> None:
    made = http.post(POD, json={"metadata": {"generateName": "w-"}, "spec": {}, "status": {"phase": "Running"}})
    assert made.status_code == 201
    pod = made.json()
    assert pod["metadata"]["name"].startswith("w-") and len(pod["metadata"]["name"]) == 7
    assert pod["status"] == {"phase": "Pending"}  # a create cannot set status
    again = http.post(POD, json={"metadata": {"name": pod["metadata"]["name"]}})
    assert _status(again) == (409, "AlreadyExists")
    elsewhere = http.post(POD, json={"metadata": {"name": "x", "namespace": "other"}})
    assert _status(elsewhere) == (400, "BadRequest")
    assert _status(http.post(POD, json={"metadata": {}})) == (422, "Invalid")
    assert _status(http.get(f"{POD}/absent")) == (404, "NotFound")


def test_writes_are_conditional_and_status_only_moves_through_its_subresource(
    fake: FakeApiServer, http: httpx.Client
) -> None:
    stored = fake.put(PODGANGS, {**k.podgang("g", pods=["a"]), "status": {"phase": "Pending"}})
    version = stored["metadata"]["resourceVersion"]
    stale = {"metadata": {"resourceVersion": "1"}, "status": {"phase": "Running"}}
    assert _status(http.patch(f"{GANG}/g/status", content=json.dumps(stale), headers=MERGE)) == (409, "Conflict")
    spec_and_status = {"metadata": {"resourceVersion": version}, "spec": {"priorityClassName": "high"}}
    patched = http.patch(f"{GANG}/g", content=json.dumps({**spec_and_status, "status": {"phase": "X"}}), headers=MERGE)
    assert patched.status_code == 200
    assert patched.json()["status"] == {"phase": "Pending"}  # the main resource does not write status
    assert patched.json()["metadata"]["generation"] == stored["metadata"]["generation"] + 1  # spec changed
    status = {"status": {"phase": "Running"}}
    moved = http.patch(f"{GANG}/g/status", content=json.dumps(status), headers=MERGE).json()
    assert (
        moved["status"]["phase"] == "Running"
        and moved["metadata"]["generation"] == patched.json()["metadata"]["generation"]
    )
    replaced = http.put(f"{GANG}/g", json={**moved, "status": {"phase": "Pending"}})
    assert replaced.json()["status"]["phase"] == "Running"
    assert _status(http.put(f"{GANG}/g", json=moved)) == (409, "Conflict")  # moved's version is gone now


def test_scheduling_gates_can_only_be_removed_and_gate_binding(fake: FakeApiServer, http: httpx.Client) -> None:
    gates = [{"name": "grove.io/podgang-pending-creation"}]
    fake.put(PODS, {**k.pod("w"), "spec": {**k.pod("w")["spec"], "schedulingGates": gates}})
    binding: dict[str, Any] = {"kind": "Binding", "metadata": {"name": "w"}, "target": {"kind": "Node", "name": "n"}}
    assert _status(http.post(f"{POD}/w/binding", json=binding))[0] == 500  # a gated pod cannot be bound
    more = {"spec": {"schedulingGates": [*gates, {"name": "x"}]}}
    assert _status(http.patch(f"{POD}/w", content=json.dumps(more), headers=MERGE)) == (422, "Invalid")
    assert http.patch(f"{POD}/w", content=json.dumps({"spec": {"schedulingGates": []}}), headers=MERGE).is_success
    assert http.post(f"{POD}/w/binding", json=binding).status_code == 201
    assert _status(http.post(f"{POD}/w/binding", json=binding)) == (409, "Conflict")
    pod = fake.get(PODS, "w", "default")
    assert pod is not None and pod["spec"]["nodeName"] == "n"


def test_label_selected_watch_sees_objects_enter_and_leave(fake: FakeApiServer, http: httpx.Client) -> None:
    version = fake.resource_version
    fake.put(PODS, {**k.pod("in"), "metadata": {"name": "in", "namespace": "default", "labels": {"team": "a"}}})
    fake.put(PODS, k.pod("never"))  # never selected: never seen
    fake.put(PODS, {**k.pod("in"), "metadata": {"name": "in", "namespace": "default", "labels": {"team": "b"}}})
    listed = http.get(POD, params={"labelSelector": "team"}).json()["items"]
    assert [p["metadata"]["name"] for p in listed] == ["in"]
    query = {"watch": "true", "resourceVersion": str(version), "labelSelector": "team=a", "timeoutSeconds": "1"}
    events = [json.loads(line) for line in http.get(POD, params=query).text.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "in"), ("DELETED", "in")]


@pytest.mark.parametrize(("policy", "left"), [("Background", []), ("Orphan", ["w"])])
def test_delete_cascades_to_dependents_unless_orphaned(
    fake: FakeApiServer, http: httpx.Client, policy: str, left: list[str]
) -> None:
    owner = fake.put(PODGANGS, k.podgang("g", pods=["w"]))
    reference = {"apiVersion": owner["apiVersion"], "kind": "PodGang", "name": "g", "uid": owner["metadata"]["uid"]}
    fake.put(PODS, {**k.pod("w"), "metadata": {**k.pod("w")["metadata"], "ownerReferences": [reference]}})
    assert http.request("DELETE", f"{GANG}/g", json={"propagationPolicy": policy}).status_code == 200
    assert [p["metadata"]["name"] for p in fake.objects(PODS)] == left


def test_a_paged_list_continues_after_the_last_key_so_changes_between_pages_skip_nothing(
    fake: FakeApiServer, http: httpx.Client
) -> None:
    for name in ("a", "c", "e", "g"):
        fake.put(PODS, k.pod(name))
    first = http.get(POD, params={"limit": 2}).json()
    assert [p["metadata"]["name"] for p in first["items"]] == ["a", "c"]
    # Between pages: one pod before the cut goes, one after it comes. An offset would skip "e"; a key does not.
    fake.delete(PODS, "a", "default")
    fake.put(PODS, k.pod("f"))
    rest = http.get(POD, params={"limit": 2, "continue": first["metadata"]["continue"]}).json()
    assert [p["metadata"]["name"] for p in rest["items"]] == ["e", "f"]
    last = http.get(POD, params={"limit": 2, "continue": rest["metadata"]["continue"]}).json()
    assert [p["metadata"]["name"] for p in last["items"]] == ["g"] and "continue" not in last["metadata"]
    assert _status(http.get(POD, params={"continue": "not-a-token"})) == (400, "BadRequest")


def test_a_watch_that_ends_leaves_the_connection_open_for_the_next_request(fake: FakeApiServer) -> None:
    # kube-apiserver keeps the connection after a watch times out; a fake that closed it unannounced made the
    # client's pool reuse a dead connection (urllib3: "Retrying ... RemoteDisconnected" after every watch).
    host, port = fake.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(f"GET {POD}?watch=true&timeoutSeconds=0 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        received = b""
        while not received.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            assert chunk, "the server closed the connection at the end of the watch"
            received += chunk
        assert b"connection: close" not in received.lower()
        sock.sendall(f"GET {POD} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert sock.recv(64).startswith(b"HTTP/1.1 200")


def test_a_podgang_status_write_without_phase_is_refused_as_the_real_api_server_refuses_it(
    fake: FakeApiServer, http: httpx.Client
) -> None:
    # Divergence found by make e2e: the CRD requires status.phase, and kube-apiserver v1.36 answered a conditions-only
    # patch of a PodGang with no status yet 422 "status.phase: Required value"; this fake had taken it.
    fake.put(PODGANGS, k.podgang("g", pods=["a"]))
    conditions = {"status": {"conditions": [{"type": "Scheduled", "status": "False"}]}}
    refused = http.patch(f"{GANG}/g/status", content=json.dumps(conditions), headers=MERGE)
    assert _status(refused) == (422, "Invalid") and "status.phase: Required value" in refused.json()["message"]
    with_phase = {"status": {"phase": "Pending", **conditions["status"]}}
    assert http.patch(f"{GANG}/g/status", content=json.dumps(with_phase), headers=MERGE).status_code == 200
    assert http.patch(f"{GANG}/g/status", content=json.dumps(conditions), headers=MERGE).status_code == 200  # kept
