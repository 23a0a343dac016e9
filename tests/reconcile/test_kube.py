"""The real ``KubeApi`` over HTTP against a tiny API server on 127.0.0.1: paths, verbs, bodies, errors, watches."""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from api.grove import LABEL_PART_OF
from benchmarks.sim.fakeapi import CORE_EVENTS, PODCLIQUESCALINGGROUPS, PODGANGS, PODS, FakeApiServer, running
from scheduler.kube.connect import load_api_client
from scheduler.reconcile.client import ApiError, Conflict
from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.rest_client import KubeApi, _PodCliqueSetKeys
from tests.reconcile.examples import example, gated, pods_per_gang

NS = "default"


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with running() as fake:
        fake.apply(example("multinode-aggregated"))
        yield fake


def _kube(server: FakeApiServer) -> KubeApi:
    return KubeApi(client.ApiClient(client.Configuration(host=server.url)), timeout=5.0)


def test_reconcile_over_http_creates_grove_objects_then_is_quiet(server: FakeApiServer) -> None:
    api = _kube(server)
    first = Reconciler(api, rng=random.Random(3)).reconcile(NS, "multinode-aggregated")
    pods = server.objects(PODS)
    assert pods_per_gang(pods) == {"multinode-aggregated-0": 4, "multinode-aggregated-0-model-instance-0": 4}
    assert not any(gated(p) for p in pods if p["metadata"]["labels"]["grove.io/podgang"] == "multinode-aggregated-0")
    assert first.writes > 0
    second = Reconciler(api, rng=random.Random(4)).reconcile(NS, "multinode-aggregated")
    assert second.writes == 0
    calls = {(r.method, r.path) for r in server.requests}
    assert ("POST", "/api/v1/namespaces/default/pods") in calls
    assert ("POST", "/apis/scheduler.grove.io/v1alpha1/namespaces/default/podgangs") in calls
    assert (
        "PATCH",
        "/apis/scheduler.grove.io/v1alpha1/namespaces/default/podgangs/multinode-aggregated-0/status",
    ) in calls
    assert ("PATCH", "/apis/grove.io/v1alpha1/namespaces/default/podcliquesets/multinode-aggregated/status") in calls
    patches = [r for r in server.requests if r.method == "PATCH"]
    assert all(r.headers["content-type"] == "application/merge-patch+json" for r in patches)
    ungates = [r for r in patches if r.path.startswith("/api/v1/namespaces/default/pods/")]
    # The last gate lifted needs no precondition (gates can only be removed): a nomination meanwhile is no conflict.
    assert ungates and all(r.body == {"spec": {"schedulingGates": []}} for r in ungates)
    lists = [r for r in server.requests if r.method == "GET" and r.path == "/api/v1/namespaces/default/pods"]
    assert lists[0].query["labelSelector"] == "app.kubernetes.io/part-of=multinode-aggregated"


def test_scale_down_over_http_deletes_the_gang_and_its_pods(server: FakeApiServer) -> None:
    api = _kube(server)
    Reconciler(api).reconcile(NS, "multinode-aggregated")
    scaled = server.store.scale(
        PODCLIQUESCALINGGROUPS,
        server.store.find(PODCLIQUESCALINGGROUPS, NS, "multinode-aggregated-0-model-instance"),
        {"spec": {"replicas": 1}},
        "PATCH",
    )
    assert scaled["spec"]["replicas"] == 1
    Reconciler(api).reconcile(NS, "multinode-aggregated")
    assert pods_per_gang(server.objects(PODS)) == {"multinode-aggregated-0": 4}
    deletes = [r for r in server.requests if r.method == "DELETE"]
    assert any(r.path.endswith("/podgangs/multinode-aggregated-0-model-instance-0") for r in deletes)
    assert all(r.body == {"propagationPolicy": "Background"} for r in deletes)


def test_errors_come_back_typed_with_the_servers_message(server: FakeApiServer) -> None:
    api = _kube(server)
    assert api.get_podcliqueset(NS, "absent") is None
    assert api.get_topology_binding("absent") is None
    api.delete("Pod", namespace=NS, name="absent")  # gone already: fine
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": NS}, "spec": {}}
    api.create(service)
    with pytest.raises(Conflict, match="already exists"):
        api.create(service)
    Reconciler(api).reconcile(NS, "multinode-aggregated")
    with pytest.raises(Conflict, match="has been modified"):
        api.patch_status(
            "PodGang", namespace=NS, name="multinode-aggregated-0", status={"phase": "Running"}, resource_version="1"
        )
    gang = server.get(PODGANGS, "multinode-aggregated-0", NS)
    assert gang is not None and gang["status"]["phase"] == "Pending"
    server.fail("GET", r"/pods$", 500, reason="InternalError", message="injected failure 500")
    with pytest.raises(ApiError, match="injected failure 500") as raised:
        api.list_owned("Pod", namespace=NS, part_of="multinode-aggregated")
    assert raised.value.status == 500


def test_invalid_pcs_posts_a_warning_event(server: FakeApiServer) -> None:
    document = example("multinode-aggregated")
    document["metadata"]["name"] = "broken"
    document["spec"]["template"]["podCliqueScalingGroups"][0]["minAvailable"] = 5
    server.apply(document)
    outcome = Reconciler(_kube(server)).reconcile(NS, "broken")
    assert not outcome.valid
    posts = [r for r in server.requests if r.method == "POST" and r.path == "/api/v1/namespaces/default/events"]
    assert len(posts) == 1
    event = posts[0].body
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == "broken"
    assert "spec.template.podCliqueScalingGroups[0].minAvailable" in event["message"]
    assert not [p for p in server.objects(PODS) if p["metadata"]["labels"].get("app.kubernetes.io/part-of") == "broken"]
    assert [e["reason"] for e in server.objects(CORE_EVENTS)] == [event["reason"]]  # stored, as the API keeps it


def test_watches_stream_events_promptly_as_podcliqueset_keys() -> None:
    # Long (300 s) server-side watches: a key can only arrive within seconds if the client reads each chunk as it
    # comes. The bounds leave room for a loaded CI machine; a buffering client would take the whole 300 s.
    with running() as server:
        server.apply(example("multinode-aggregated"))
        api = _kube(server)
        stop = threading.Event()
        threads = api.start_watches(stop)
        try:
            assert (NS, "multinode-aggregated") in api.changes(60.0)  # the initial list
            while api.changes(0.3):  # drain until quiet
                pass
            server.apply(example("multinode-disaggregated"))
            started = time.monotonic()
            seen: set[tuple[str, str]] = set()
            while (NS, "multinode-disaggregated") not in seen and time.monotonic() - started < 60:
                seen |= api.changes(0.2)
            assert (NS, "multinode-disaggregated") in seen
            # Promptly: well before the 300 s server-side watch ends, with room for a loaded machine.
            assert time.monotonic() - started < 15.0
            Reconciler(api).reconcile(NS, "multinode-disaggregated")  # our own writes come back as the PCS key
            assert api.changes(60.0) == {(NS, "multinode-disaggregated")}
        finally:
            stop.set()
            stopped = time.monotonic()
            for thread in threads:
                thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)
        assert time.monotonic() - stopped < 15.0  # stop unblocks the 300 s watches at once (well before they end)
    watches = [r for r in server.requests if r.query.get("watch") == "true"]
    pod_watch = next(r for r in watches if r.path == "/api/v1/pods")
    assert pod_watch.query["labelSelector"] == "app.kubernetes.io/managed-by=grove-operator,grove.io/podclique"


def test_kubeconfig_credentials_reach_the_server(server: FakeApiServer, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": server.url}}],
                "users": [{"name": "me", "user": {"token": "s3cret"}}],
                "contexts": [{"name": "ctx", "context": {"cluster": "fake", "user": "me"}}],
                "current-context": "ctx",
            }
        )
    )
    api = KubeApi(load_api_client(str(kubeconfig)))
    assert [p["metadata"]["name"] for p in api.list_podcliquesets()] == ["multinode-aggregated"]
    assert server.requests[-1].headers.get("authorization") == "Bearer s3cret"


def test_run_loop_over_http_converges_a_new_pcs_and_follows_binds(server: FakeApiServer) -> None:
    api = _kube(server)
    stop = threading.Event()
    threads = api.start_watches(stop)
    loop = threading.Thread(target=Reconciler(api).run, kwargs={"stop": stop, "poll_seconds": 0.2}, daemon=True)
    loop.start()
    try:

        def wait_for(condition: Callable[[list[dict[str, Any]]], bool]) -> bool:
            deadline = time.monotonic() + 60  # waiting for something that will happen: generous
            while time.monotonic() < deadline:
                if condition(server.objects(PODS)):
                    return True
                time.sleep(0.05)
            return False

        assert wait_for(lambda pods: len(pods) == 8)
        base = "multinode-aggregated-0"
        assert wait_for(
            lambda pods: not any(gated(p) for p in pods if p["metadata"]["labels"]["grove.io/podgang"] == base)
        )
        for pod in server.objects(PODS):
            if pod["metadata"]["labels"]["grove.io/podgang"] == base:
                server.bind(pod["metadata"]["name"], NS, "node-1")  # refused while the pod is still gated
        # Binding the base gang is a pod event: the scaled gang's gates lift with no resync.
        assert wait_for(lambda pods: not any(gated(p) for p in pods))
    finally:
        stop.set()
        loop.join(timeout=60)
        for thread in threads:
            thread.join(timeout=60)
    assert not loop.is_alive()


def test_serve_refuses_an_unusable_kubeconfig(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from scheduler.cli import main

    assert main(["reconcile", "--kubeconfig", str(tmp_path / "missing")]) == 1
    assert "cannot load Kubernetes config" in capsys.readouterr().err


def test_unreachable_server_is_an_api_error_to_retry_not_a_crash() -> None:
    server = FakeApiServer()
    url = server.url
    server.stop()  # never started: nothing listens on the port any more
    configuration = client.Configuration(host=url)
    configuration.retries = 0
    api = KubeApi(client.ApiClient(configuration), timeout=2.0)
    with pytest.raises(ApiError) as raised:
        api.list_podcliquesets()
    assert raised.value.status == 0 and "GET /apis/grove.io/v1alpha1/podcliquesets" in str(raised.value)


def test_the_init_containers_token_secret_exists_before_the_pods_that_mount_it(server: FakeApiServer) -> None:
    # A pod mounting a Secret that does not exist would wait in ContainerCreating: the Secret must come first. The
    # pods keep their own account (here the namespace's default), as Grove's do.
    document = example("training-scaled")
    document["spec"]["replicas"] = 1
    server.apply(document)
    outcome = Reconciler(_kube(server)).reconcile(NS, "training")
    assert outcome.valid and not outcome.errors
    waiting = [p for p in server.objects(PODS) if p["spec"].get("initContainers")]
    assert waiting and not any(p["spec"].get("serviceAccountName") for p in waiting)
    creates = [(r.method, r.path.rsplit("/", 1)[-1]) for r in server.requests if r.method == "POST"]
    assert creates.index(("POST", "secrets")) < creates.index(("POST", "pods"))


def test_a_relist_names_podcliquesets_whose_objects_vanished_in_the_gap() -> None:
    """An expired watch's relist carries no deletions: the PodCliqueSets named before it are work again, so one
    whose pods were all deleted while the watch was down is still reconciled (and each key is queued once)."""
    changes: queue.Queue[tuple[str, str]] = queue.Queue()
    keys = _PodCliqueSetKeys("Pod", changes)

    def pod(pcs: str, name: str) -> dict[str, Any]:
        return {"metadata": {"namespace": "ns", "name": name, "labels": {LABEL_PART_OF: pcs}}}

    def drained() -> list[tuple[str, str]]:
        found = []
        while not changes.empty():
            found.append(changes.get_nowait())
        return found

    keys.on_list([pod("a", "a-0"), pod("a", "a-1"), pod("b", "b-0")])
    assert drained() == [("ns", "a"), ("ns", "b")]
    keys.on_event("ADDED", pod("c", "c-0"))
    assert drained() == [("ns", "c")]
    keys.on_list([pod("a", "a-0")])  # b's and c's pods went while the watch was down
    assert drained() == [("ns", "a"), ("ns", "b"), ("ns", "c")]
    keys.on_list([pod("a", "a-0")])
    assert drained() == [("ns", "a")]
