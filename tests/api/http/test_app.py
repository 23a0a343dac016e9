"""The HTTP app's routing and error policy, with a tiny Extender that records what reached it."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from pydantic import BaseModel, field_validator

from api.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
)
from api.http.app import DEFAULT_MAX_BODY_BYTES, create_app, create_debug_app, create_probe_app
from api.http.body import BodyDecoder
from tests.extender_support import SyncClient, filter_body, harness, node, pod

POD = {"metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": {"containers": []}}


class EchoExtender:
    """Passes every node, scores by position, binds everything; ``fail`` makes every verb raise."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fail = False
        self.is_ready = True

    def _enter(self, verb: str) -> None:
        self.calls.append(verb)
        if self.fail:
            raise RuntimeError("boom")

    async def filter(self, args: ExtenderArgs) -> ExtenderFilterResult:
        self._enter("filter")
        if args.NodeNames is not None:
            return ExtenderFilterResult(NodeNames=args.NodeNames)
        return ExtenderFilterResult(Nodes=args.Nodes)

    async def prioritize(self, args: ExtenderArgs) -> Sequence[HostPriority]:
        self._enter("prioritize")
        return [HostPriority(Host=n, Score=min(i, 10)) for i, n in enumerate(args.candidate_names())]

    async def bind(self, args: ExtenderBindingArgs) -> ExtenderBindingResult:
        self._enter("bind")
        return ExtenderBindingResult()

    async def preempt(self, args: ExtenderPreemptionArgs) -> ExtenderPreemptionResult:
        self._enter("preempt")
        return ExtenderPreemptionResult()

    def healthy(self) -> bool:
        if self.fail:
            raise RuntimeError("probe boom")
        return True

    def ready(self) -> bool:
        return self.is_ready

    def debug_gangs(self) -> Sequence[Mapping[str, Any]]:
        return [{"gang": "default/g", "state": "Planned"}]


@pytest.fixture
def echo() -> EchoExtender:
    return EchoExtender()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def client(echo: EchoExtender, registry: CollectorRegistry) -> SyncClient:
    return SyncClient(create_app(echo, registry=registry, max_body_bytes=4096))


@pytest.fixture
def debug(echo: EchoExtender, registry: CollectorRegistry) -> SyncClient:
    return SyncClient(create_debug_app(echo, registry=registry))


def test_filter_answers_in_the_mode_it_was_asked(client: SyncClient) -> None:
    names = client.post("/filter", json={"Pod": POD, "NodeNames": ["a", "b"]}).json()
    assert names["NodeNames"] == ["a", "b"] and names["Nodes"] is None
    node_list = {"items": [{"metadata": {"name": "a"}}]}
    nodes = client.post("/filter", json={"Pod": POD, "Nodes": node_list}).json()
    assert [n["metadata"]["name"] for n in nodes["Nodes"]["items"]] == ["a"] and nodes["NodeNames"] is None


def test_prioritize_is_a_bare_array(client: SyncClient) -> None:
    reply = client.post("/prioritize", json={"Pod": POD, "NodeNames": ["a", "b"]}).json()
    assert reply == [{"Host": "a", "Score": 0}, {"Host": "b", "Score": 1}]


@pytest.mark.parametrize(
    ("path", "body", "status", "named"),
    [
        pytest.param("/filter", b"{not json", 400, "filter", id="malformed-json"),
        pytest.param("/filter", b"", 400, "empty body", id="empty"),
        pytest.param("/filter", json.dumps({"NodeNames": ["a"]}).encode(), 400, "Pod", id="missing-pod"),
        pytest.param("/filter", json.dumps({"Pod": POD, "NodeNames": "a"}).encode(), 400, "NodeNames", id="wrong-type"),
        pytest.param("/bind", json.dumps({"PodName": "p"}).encode(), 400, "PodNamespace", id="bind-missing-field"),
        pytest.param("/filter", b"[" + b"1," * 4000 + b"1]", 413, "limit", id="oversized"),
    ],
)
def test_bad_requests_are_4xx_naming_the_problem(
    client: SyncClient, echo: EchoExtender, path: str, body: bytes, status: int, named: str
) -> None:
    reply = client.post(path, content=body, headers={"content-type": "application/json"})
    assert reply.status_code == status
    assert named in reply.json()["Error"]
    assert echo.calls == []


def test_the_default_limit_fits_node_names_mode_and_refuses_a_big_node_list(echo: EchoExtender) -> None:
    client = SyncClient(create_app(echo))  # the default limit
    # Node-names mode for 20,000 nodes: a Pod and 20,000 names of ~30 characters, about 650 KB.
    names = [f"gpu-node-{i:05d}.rack-{i // 18:04d}" for i in range(20_000)]
    assert client.post("/filter", json={"Pod": POD, "NodeNames": names}).status_code == 200
    # NodeList mode for 4,000 nodes of ~6 KB each (a real node): refused unread, with the limit named.
    node_list = b'{"Pod": {}, "Nodes": {"items": [' + b" " * (24 << 20) + b"]}}"
    reply = client.post("/filter", content=node_list, headers={"content-type": "application/json"})
    assert reply.status_code == 413 and str(DEFAULT_MAX_BODY_BYTES) in reply.json()["Error"]


def test_an_extender_failure_is_a_200_with_error_never_a_500(
    client: SyncClient, debug: SyncClient, echo: EchoExtender
) -> None:
    echo.fail = True
    assert "boom" in client.post("/filter", json={"Pod": POD, "NodeNames": ["a"]}).json()["Error"]
    assert (
        "boom"
        in client.post("/bind", json={"PodName": "p", "PodNamespace": "d", "PodUID": "u", "Node": "a"}).json()["Error"]
    )
    assert client.post("/prioritize", json={"Pod": POD, "NodeNames": ["a"]}).json() == []
    assert client.post("/preempt", json={"Pod": POD}).json() == {"NodeNameToMetaVictims": {}}
    metrics = debug.get("/metrics").text
    assert 'grove_extender_requests_rejected_total{cause="internal",verb="filter"} 1.0' in metrics


def test_a_failure_outside_the_verbs_is_answered_and_logged_once(
    echo: EchoExtender, caplog: pytest.LogCaptureFixture
) -> None:
    # The test client re-raises whatever escapes the app, as uvicorn would log it a second time: nothing may escape.
    echo.fail = True
    reply = SyncClient(create_probe_app(echo)).get("/healthz")
    assert reply.status_code == 503 and reply.json() == {"Error": "grove-extender: internal error: RuntimeError"}
    assert [r.levelname for r in caplog.records if r.exc_info] == ["ERROR"]


def test_probes_metrics_and_debug(client: SyncClient, debug: SyncClient, echo: EchoExtender) -> None:
    probes = SyncClient(create_probe_app(echo))
    for app in (client, probes):
        assert app.get("/healthz").status_code == 200
        assert app.get("/readyz").status_code == 200
    echo.is_ready = False
    assert client.get("/readyz").status_code == 503 and probes.get("/readyz").status_code == 503
    client.post("/filter", json={"Pod": POD, "NodeNames": ["a"]})
    assert 'grove_extender_request_seconds_count{verb="filter"} 1.0' in debug.get("/metrics").text
    assert debug.get("/debug/gangs").json() == {"gangs": [{"gang": "default/g", "state": "Planned"}]}


@pytest.mark.parametrize("path", ["/metrics", "/debug/gangs"])
def test_what_the_extender_knows_is_not_on_the_verb_or_probe_port(echo: EchoExtender, path: str) -> None:
    for app in (create_app(echo), create_probe_app(echo)):
        assert SyncClient(app).get(path).status_code == 404


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_verbs_are_post_only(client: SyncClient, echo: EchoExtender, method: str) -> None:
    reply = client.request(method, "/filter")
    assert reply.status_code == 405 and reply.headers["allow"] == "POST"
    assert "POST" in reply.json()["Error"] and echo.calls == []


def test_the_probe_port_serves_no_verb(echo: EchoExtender) -> None:
    reply = SyncClient(create_probe_app(echo)).post("/filter", json={"Pod": POD, "NodeNames": ["a"]})
    assert reply.status_code in (404, 405) and echo.calls == []


def test_each_app_has_its_own_registry(echo: EchoExtender) -> None:
    first_registry, second_registry = CollectorRegistry(), CollectorRegistry()
    first = SyncClient(create_app(echo, registry=first_registry))
    create_app(echo, registry=second_registry)
    first.post("/filter", json={"Pod": POD, "NodeNames": ["a"]})
    first_metrics = SyncClient(create_debug_app(echo, registry=first_registry)).get("/metrics").text
    second_metrics = SyncClient(create_debug_app(echo, registry=second_registry)).get("/metrics").text
    assert 'grove_extender_request_seconds_count{verb="filter"} 1.0' in first_metrics
    assert 'grove_extender_request_seconds_count{verb="filter"} 0.0' in second_metrics


# --- fuzzing the real coordinator: whatever arrives, never a 500 -------------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=12,
)
_pod_like = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {"name": st.sampled_from(["solo", "g-w0", "ghost"]), "namespace": st.just("default")}
        )
    },
    optional={"spec": _json_values, "status": _json_values},
)
_bodies = st.one_of(
    _json_values,
    st.fixed_dictionaries({"Pod": _pod_like}, optional={"NodeNames": _json_values, "Nodes": _json_values}),
    st.fixed_dictionaries(
        {"PodName": st.sampled_from(["solo", "g-w0", "ghost"]), "PodNamespace": st.just("default")},
        optional={"PodUID": _json_values, "Node": st.sampled_from(["a0", "nowhere", ""])},
    ),
    st.fixed_dictionaries({"Pod": _pod_like}, optional={"NodeNameToMetaVictims": _json_values}),
)

_fuzz_target = harness(
    nodes=[node("a0"), node("a1")],
    pods=[pod("solo", gpus=1), pod("g-w0", gang="g", gpus=1)],
    bind_wait=0.05,
)
_fuzz_client = SyncClient(_fuzz_target.app)


@pytest.mark.parametrize(
    ("quantity", "rule"),
    [
        pytest.param("1e40", "64-bit", id="1e40"),
        pytest.param("9Ei", "64-bit", id="9Ei"),
        pytest.param("12345678901234567890", "64-bit", id="20-digits"),
        pytest.param("5000", "sane maximum", id="5000-gpus"),
        pytest.param("-4", "negative", id="negative"),
    ],
)
def test_absurd_quantities_are_a_400_naming_the_field(quantity: str, rule: str) -> None:
    # NodeList mode (nodeCacheCapable: false): the nodes' allocatable is read from the request.
    nodes = {"items": [{"metadata": {"name": "a0"}, "status": {"allocatable": {"nvidia.com/gpu": quantity}}}]}
    reply = _fuzz_client.post("/filter", content=json.dumps({"Pod": POD, "Nodes": nodes}))
    assert reply.status_code == 400, reply.text
    error = reply.json()["Error"]
    assert "Nodes.items.0.status.allocatable" in error and "nvidia.com/gpu" in error and rule in error


@pytest.mark.parametrize("quantity", ["1e40", "-4", "0"])
def test_what_a_request_says_a_pod_asks_for_moves_nothing(quantity: str) -> None:
    """The Pod in a request is read for its identity alone: the extender plans from the API's copy (the store's),
    so a stale, absurd or forged spec on the wire neither fails the call nor changes the answer."""
    h = harness(nodes=[node("a0"), node("a1")], pods=[pod("solo", gpus=8)])
    client = SyncClient(h.app)
    honest = client.post("/filter", json=filter_body(pod("solo", gpus=8), ["a0", "a1"])).json()
    claimed = pod("solo", gpus=8).model_dump(mode="json")
    claimed["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = quantity
    reply = client.post("/filter", content=json.dumps({"Pod": claimed, "NodeNames": ["a0", "a1"]}))
    assert reply.status_code == 200 and reply.json()["NodeNames"] == honest["NodeNames"] and honest["NodeNames"]
    ghost = {**claimed, "metadata": {"name": "ghost", "namespace": "default", "uid": "x"}}
    unknown = client.post("/filter", content=json.dumps({"Pod": ghost, "NodeNames": ["a0", "a1"]})).json()
    assert "not known" in unknown["Error"] and h.writer.bindings == []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(["/filter", "/prioritize", "/bind", "/preempt"]), body=_bodies)
def test_fuzzed_bodies_never_yield_a_server_error(path: str, body: Any) -> None:
    reply = _fuzz_client.post(path, content=json.dumps(body))
    assert reply.status_code in (200, 400), (reply.status_code, reply.text)
    assert isinstance(reply.json(), (dict, list))


# --- large bodies: decoded off the event loop, one at a time ------------------------------------------------------


class _Probe(BaseModel):
    """Records the thread each decode ran on, and how many ran at once."""

    payload: str

    @field_validator("payload")
    @classmethod
    def _record(cls, value: str) -> str:
        with _seen_lock:
            _running.append(1)
            _threads.append(threading.current_thread().name)
            _peak.append(len(_running))
        time.sleep(0.01)
        with _seen_lock:
            _running.pop()
        return value


_seen_lock = threading.Lock()
_running: list[int] = []
_threads: list[str] = []
_peak: list[int] = []


def test_large_bodies_are_decoded_in_a_worker_thread_one_at_a_time() -> None:
    decoder = BodyDecoder(max_bytes=1 << 20, off_loop_bytes=1024)
    small, large = json.dumps({"payload": "x"}).encode(), json.dumps({"payload": "x" * 4096}).encode()

    async def main() -> str:
        await decoder.decode(_Probe, small, "filter")
        loop_thread = threading.current_thread().name
        await asyncio.gather(*(decoder.decode(_Probe, large, "filter") for _ in range(4)))
        return loop_thread

    _threads.clear()
    _peak.clear()
    loop_thread = asyncio.run(main())
    assert _threads[0] == loop_thread, "a small body is decoded where it arrived"
    assert len(_threads) == 5 and loop_thread not in _threads[1:], "large bodies never on the event loop"
    assert max(_peak) == 1, "one large decode at a time: several would hold several copies of a cluster"
