"""KubeClusterWriter against the fake API server over HTTP: request shapes, effects, errors a person can act on
(with the HTTP status kept for the caller), and the connection settings taken from the kubeconfig (token, CA)."""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import uvloop
from kubernetes.client import ApiClient

from benchmarks.sim.fakeapi import PODGANGS, PODS, FakeApiServer, running
from scheduler.cli.certs import issue
from scheduler.kube.connect import load_api_client
from scheduler.kube.errors import WriteError
from scheduler.kube.http import THROTTLED_RETRIES, TOKEN_SECONDS, ApiHttp, ApiUnreachable, Request
from scheduler.kube.nominations import Nomination, NotSent
from scheduler.kube.writer import KubeClusterWriter
from tests.kube import objects as k

FIXED_NOW = datetime(2026, 11, 25, 23, 0, 0, 250000, tzinfo=UTC)


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    with running(seed=k.gang_cluster(nodes=1, pods=16)) as server:
        yield server


@pytest.fixture
def writer(api_client: ApiClient) -> Iterator[KubeClusterWriter]:
    writer = KubeClusterWriter(api_client, instance="replica-a", timeout=(1.0, 1.0), clock=lambda: FIXED_NOW)
    yield writer
    writer.close()


def bind(writer: KubeClusterWriter, name: str, *, uid: str = "", node: str = "gpu-0") -> None:
    """One bind awaited on an event loop of the caller's, as the release does on uvicorn's; the loop's connections
    are closed as it ends."""
    asyncio.run(writer.bind(namespace="default", name=name, uid=uid, node=node))


def bind_error(writer: KubeClusterWriter, name: str, *, uid: str = "") -> WriteError:
    with pytest.raises(WriteError) as caught:
        bind(writer, name, uid=uid)
    return caught.value


def uid_of(fake: FakeApiServer, name: str) -> str:
    pod = fake.get(PODS, name, "default")
    assert pod is not None
    return str(pod["metadata"]["uid"])


def test_bind_posts_a_binding_with_the_pod_uid(fake: FakeApiServer, writer: KubeClusterWriter) -> None:
    bind(writer, "w-0", uid=uid_of(fake, "w-0"))
    bound = fake.get(PODS, "w-0", "default")
    assert bound is not None and bound["spec"]["nodeName"] == "gpu-0"
    (request,) = fake.requests_to("POST", r"^/api/v1/namespaces/default/pods/w-0/binding$")
    assert request.body["kind"] == "Binding"
    assert request.body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "gpu-0"}
    assert request.body["metadata"]["uid"] == uid_of(fake, "w-0")
    assert request.headers["authorization"] == "Bearer test-token"  # the kubeconfig's user
    assert request.headers["content-type"] == "application/json"


def test_a_loop_that_ends_closes_its_connections(
    fake: FakeApiServer, writer: KubeClusterWriter, caplog: pytest.LogCaptureFixture
) -> None:
    async def two_binds(explicit: bool) -> None:
        await writer.bind(namespace="default", name="w-0" if explicit else "w-1", uid="", node="gpu-0")
        if explicit:
            await writer.aclose()  # closes now; the next bind on this loop would open new connections

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(two_binds(explicit=True))
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:  # uvicorn's loop
            runner.run(two_binds(explicit=False))
        gc.collect()
    assert "Unclosed" not in caplog.text
    assert [p["spec"].get("nodeName") for p in fake.objects(PODS)[:2]] == ["gpu-0", "gpu-0"]


def test_concurrent_binds_all_land(fake: FakeApiServer, writer: KubeClusterWriter) -> None:
    uids = {f"w-{i}": uid_of(fake, f"w-{i}") for i in range(16)}

    async def all_at_once() -> None:
        await asyncio.gather(*(writer.bind(namespace="default", name=n, uid=u, node="gpu-0") for n, u in uids.items()))
        await writer.aclose()

    asyncio.run(all_at_once())
    assert all(p["spec"].get("nodeName") == "gpu-0" for p in fake.objects(PODS))


@pytest.mark.parametrize(
    ("name", "uid", "expected"),
    [
        pytest.param("gone", "", r"binding pod default/gone to node gpu-0: not found .*deleted", id="404-pod-gone"),
        pytest.param("w-1", "stale-uid", r"conflict .*Precondition failed", id="409-recreated-pod"),
    ],
)
def test_bind_errors_say_what_happened(writer: KubeClusterWriter, name: str, uid: str, expected: str) -> None:
    error = bind_error(writer, name, uid=uid)
    assert re.search(expected, str(error))


def test_binding_an_already_bound_pod_is_a_conflict(fake: FakeApiServer, writer: KubeClusterWriter) -> None:
    bind(writer, "w-2")
    error = bind_error(writer, "w-2")
    assert re.search(r'conflict .*already assigned to node "gpu-0"', str(error)) and error.status == 409


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (403, "Forbidden", r"forbidden \(pods \"w-3\" is forbidden: .*\); grant .*deploy/base/extender-rbac.yaml"),
        (401, "Unauthorized", r"unauthorized \(.*\); the extender's credentials are missing or expired"),
        (422, "Invalid", r"rejected as invalid \(pods \"w-3\" is forbidden"),
        (429, "TooManyRequests", r"API server unavailable \(HTTP 429: .*\); retry later"),
        (500, "InternalError", r"API server unavailable \(HTTP 500: .*\); retry later"),
        (503, "ServiceUnavailable", r"API server unavailable \(HTTP 503: .*\); retry later"),
        (418, "Teapot", r"HTTP 418: pods"),
    ],
)
def test_refusals_keep_their_status_and_say_what_fixes_them(
    fake: FakeApiServer, writer: KubeClusterWriter, status: int, reason: str, expected: str
) -> None:
    message = 'pods "w-3" is forbidden: User "system:serviceaccount:grove:grove-extender" cannot create pods/binding'
    fake.fail("POST", r"/binding$", status, reason=reason, message=message)
    error = bind_error(writer, "w-3")
    assert re.search(r"^binding pod default/w-3 to node gpu-0: " + expected, str(error)), str(error)
    assert error.status == status  # the release tells gone (404) from passing (the rest) by it
    bind(writer, "w-3")  # the fault was one-shot: the same writer's next call goes through


def test_a_refusal_without_a_status_body_names_the_http_status(fake: FakeApiServer, writer: KubeClusterWriter) -> None:
    fake.fail("POST", r"/binding$", 502, reason="", message="")
    error = bind_error(writer, "w-5")
    assert "API server unavailable (HTTP 502: " in str(error) and error.status == 502


def test_a_slow_api_server_is_a_timeout_not_a_hang(fake: FakeApiServer, api_client: ApiClient) -> None:
    fake.delay("POST", r"/binding$", 1.0)
    fake.delay("PATCH", r"/status$", 1.0)
    quick = KubeClusterWriter(api_client, timeout=(0.5, 0.3))
    try:
        error = bind_error(quick, "w-4")
        assert "did not answer within 0.3s" in str(error) and error.status is None
        with pytest.raises(WriteError, match=r"did not answer within 0.3s"):
            quick.patch_podgang_status(namespace="default", name="g", status={"phase": "Running"})
    finally:
        quick.close()


def test_a_reset_connection_is_a_write_error_and_the_next_call_reconnects(
    fake: FakeApiServer, writer: KubeClusterWriter
) -> None:
    bind(writer, "w-6")  # a kept-alive connection now exists
    fake.drop("POST", r"/pods/w-7/binding$")
    error = bind_error(writer, "w-7")
    assert "cannot reach the API server" in str(error) and error.status is None
    bind(writer, "w-7")
    bound = fake.get(PODS, "w-7", "default")
    assert bound is not None and bound["spec"]["nodeName"] == "gpu-0"


def test_an_unreachable_api_server(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with running() as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    kubeconfig.write_text(re.sub(r"http://127.0.0.1:\d+", f"http://127.0.0.1:{port}", kubeconfig.read_text()))
    client = load_api_client(str(kubeconfig))
    writer = KubeClusterWriter(client)
    try:
        error = bind_error(writer, "w-0")
        assert "cannot reach the API server" in str(error) and error.status is None
    finally:
        writer.close()
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
    with pytest.raises(WriteError, match=r"updating status of PodGang default/nope: not found") as caught:
        writer.patch_podgang_status(namespace="default", name="nope", status={"phase": "Running"})
    assert caught.value.status == 404


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


def test_tls_with_the_kubeconfigs_ca_and_token(tmp_path: Path) -> None:
    """HTTPS as a real API server speaks it: the writer trusts the CA the kubeconfig names (not the system's) and
    sends the kubeconfig's token."""
    pems = issue(server_names=["localhost"], days=1).write_pems(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pems["server_cert"], pems["server_key"])
    with running(k.gang_cluster(nodes=1, pods=2), tls=context) as fake:
        port = fake.url.rsplit(":", 1)[1]
        trusting = fake.write_kubeconfig(
            tmp_path / "trusting", token="s3cret", ca=pems["ca"], server=f"https://localhost:{port}"
        )
        client = load_api_client(str(trusting))
        writer = KubeClusterWriter(client)
        try:
            bind(writer, "w-0")
            writer.patch_podgang_status(namespace="default", name="g", status={"phase": "Starting"})
        finally:
            writer.close()
            client.close()
        assert [r.headers["authorization"] for r in fake.requests] == ["Bearer s3cret"] * 2
        # A kubeconfig without that CA: the server's certificate is refused, nothing is sent.
        stranger = fake.write_kubeconfig(tmp_path / "stranger", server=f"https://localhost:{port}")
        client = load_api_client(str(stranger))
        writer = KubeClusterWriter(client)
        try:
            error = bind_error(writer, "w-1")
        finally:
            writer.close()
            client.close()
        assert "cannot reach the API server" in str(error) and "CERTIFICATE_VERIFY_FAILED" in str(error)
        assert len(fake.requests) == 2


def test_a_refreshed_token_is_sent_once_the_last_one_is_old(fake: FakeApiServer, api_client: ApiClient) -> None:
    """The configuration refreshes its token (an in-cluster projected token, an exec plugin's): the client reads
    it again at most ``TOKEN_SECONDS`` after it last did."""
    configuration = api_client.configuration
    issued = iter(["first", "second"])
    configuration.refresh_api_key_hook = lambda c: c.api_key.update(BearerToken=f"Bearer {next(issued)}")
    now = [0.0]
    http = ApiHttp(configuration, timeout=(1.0, 1.0), pool_size=2, clock=lambda: now[0])

    def post() -> None:
        reply = http.send(Request("POST", "/api/v1/namespaces/default/pods/w-0/binding", b"{}"))
        assert reply.status == 400  # not a Binding: only the headers matter here

    try:
        post()
        now[0] = TOKEN_SECONDS - 0.5
        post()  # still the first
        now[0] = TOKEN_SECONDS + 0.5
        post()
    finally:
        http.close()
    sent = [r.headers["authorization"] for r in fake.requests_to("POST", r"/binding$")]
    assert sent == ["Bearer first", "Bearer first", "Bearer second"]


def test_nothing_keeps_an_ended_loop(fake: FakeApiServer, writer: KubeClusterWriter) -> None:
    """A loop that bound once and ended is forgotten: a process whose loops come and go does not keep them."""
    with asyncio.Runner() as runner:
        runner.run(writer.bind(namespace="default", name="w-8", uid="", node="gpu-0"))
        ended = weakref.ref(runner.get_loop())
    gc.collect()
    assert ended() is None


def test_a_tokens_line_breaks_never_reach_the_wire(fake: FakeApiServer, api_client: ApiClient) -> None:
    """A token read from a file keeps its trailing newline in some loaders: sent as is it would end the header block
    early. It is trimmed; a line break inside a token cannot be trimmed and is refused, saying so."""
    configuration = api_client.configuration
    tokens = iter(["Bearer from-a-file\n", "Bearer one\r\nX-Injected: yes"])
    configuration.refresh_api_key_hook = lambda c: c.api_key.update(BearerToken=next(tokens))
    now = [0.0]
    http = ApiHttp(configuration, timeout=(1.0, 1.0), pool_size=2, clock=lambda: now[0])
    try:
        assert http.send(Request("POST", "/api/v1/namespaces/default/pods/w-0/binding", b"{}")).status == 400
        now[0] = TOKEN_SECONDS + 1
        with pytest.raises(ApiUnreachable, match="bearer token has a line break"):
            http.send(Request("POST", "/api/v1/namespaces/default/pods/w-0/binding", b"{}"))
    finally:
        http.close()
    sent = [r.headers["authorization"] for r in fake.requests_to("POST", r"/binding$")]
    assert sent == ["Bearer from-a-file"]
    assert not any("x-injected" in r.headers for r in fake.requests)


def test_a_write_turned_away_by_priority_and_fairness_is_sent_again_after_its_retry_after(
    fake: FakeApiServer, writer: KubeClusterWriter
) -> None:
    fake.throttle("POST", r"/pods/w-8/binding$", retry_after=1)
    started = time.monotonic()
    bind(writer, "w-8")
    assert time.monotonic() - started >= 1.0, "sent again only after the Retry-After"
    assert len(fake.requests_to("POST", r"/pods/w-8/binding$")) == 2
    bound = fake.get(PODS, "w-8", "default")
    assert bound is not None and bound["spec"]["nodeName"] == "gpu-0"


def test_throttled_writes_are_sent_again_a_bounded_number_of_times(
    fake: FakeApiServer, writer: KubeClusterWriter
) -> None:
    fake.throttle("PATCH", r"/podgangs/g/status$", retry_after=0, times=THROTTLED_RETRIES + 1)
    with pytest.raises(WriteError, match=r"API server unavailable \(HTTP 429: ") as caught:
        writer.patch_podgang_status(namespace="default", name="g", status={"phase": "Starting"})
    assert caught.value.status == 429
    assert len(fake.requests_to("PATCH", r"/podgangs/g/status$")) == THROTTLED_RETRIES + 1
    writer.patch_podgang_status(namespace="default", name="g", status={"phase": "Starting"})  # the next one lands


def test_nominations_throttled_land_and_an_eviction_throttled_is_left_to_its_caller(
    fake: FakeApiServer, writer: KubeClusterWriter
) -> None:
    pod = fake.get(PODS, "w-9", "default")
    assert pod is not None
    fake.throttle("PATCH", r"/pods/w-9/status", retry_after=0, times=2)
    answers: list[WriteError | None] = []
    done = threading.Event()

    def answered(_: Nomination, error: WriteError | None) -> None:
        answers.append(error)
        done.set()

    writer.nominate([Nomination("default", "w-9", str(pod["metadata"]["uid"]), "gpu-0")], answered)
    assert done.wait(10.0)
    assert len(fake.requests_to("PATCH", r"/pods/w-9/status")) == 3
    # The third reached the fake's handler, which serves merge patches only (kube-apiserver applies it: e2e).
    (error,) = answers
    assert error is not None and error.status == 415

    fake.throttle("POST", r"/pods/w-9/eviction$", retry_after=0)
    with pytest.raises(WriteError) as caught:
        writer.evict(namespace="default", name="w-9", uid=str(pod["metadata"]["uid"]))
    assert caught.value.status == 429
    assert len(fake.requests_to("POST", r"/pods/w-9/eviction$")) == 1, "an eviction is not sent again here"


def test_a_nomination_no_longer_wanted_when_its_turn_comes_is_not_sent(
    fake: FakeApiServer, writer: KubeClusterWriter
) -> None:
    uids = {name: uid_of(fake, name) for name in ("w-10", "w-11")}
    answers: dict[str, WriteError | None] = {}
    done = threading.Event()

    def answered(nomination: Nomination, error: WriteError | None) -> None:
        answers[nomination.name] = error
        if len(answers) == 2:
            done.set()

    nominations = [Nomination("default", name, uid, "gpu-0") for name, uid in uids.items()]
    writer.nominate(nominations, answered, wanted=lambda n: n.name != "w-10")
    assert done.wait(10.0)
    assert isinstance(answers["w-10"], NotSent)
    assert not isinstance(answers["w-11"], NotSent)  # sent (the fake then refuses the JSON patch: 415)
    assert fake.requests_to("PATCH", r"/pods/w-10/status") == []
    assert len(fake.requests_to("PATCH", r"/pods/w-11/status")) == 1


def test_a_nomination_whose_wanted_test_fails_is_sent_and_answered(
    fake: FakeApiServer, writer: KubeClusterWriter, caplog: pytest.LogCaptureFixture
) -> None:
    answers: list[WriteError | None] = []
    done = threading.Event()

    def answered(_: Nomination, error: WriteError | None) -> None:
        answers.append(error)
        done.set()

    def broken(_: Nomination) -> bool:
        raise RuntimeError("a bug in the caller's test")

    with caplog.at_level(logging.ERROR):
        writer.nominate([Nomination("default", "w-12", uid_of(fake, "w-12"), "gpu-0")], answered, wanted=broken)
        assert done.wait(10.0), "answered all the same: the nominator holds the pod's next wish until it is"
    assert len(fake.requests_to("PATCH", r"/pods/w-12/status")) == 1
    assert not isinstance(answers[0], NotSent)
    assert "send test failed" in caplog.text
