"""The HTTP app's routing and error policy, with a tiny Extender that records what reached it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.app import create_app
from api.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
)
from tests.extender_support import SyncClient, harness, node, pod

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
        return True

    def ready(self) -> bool:
        return self.is_ready

    def debug_gangs(self) -> Sequence[Mapping[str, Any]]:
        return [{"gang": "default/g", "state": "Planned"}]


@pytest.fixture
def echo() -> EchoExtender:
    return EchoExtender()


@pytest.fixture
def client(echo: EchoExtender) -> SyncClient:
    return SyncClient(create_app(echo, max_body_bytes=4096))


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


def test_an_extender_failure_is_a_200_with_error_never_a_500(client: SyncClient, echo: EchoExtender) -> None:
    echo.fail = True
    assert "boom" in client.post("/filter", json={"Pod": POD, "NodeNames": ["a"]}).json()["Error"]
    assert (
        "boom"
        in client.post("/bind", json={"PodName": "p", "PodNamespace": "d", "PodUID": "u", "Node": "a"}).json()["Error"]
    )
    assert client.post("/prioritize", json={"Pod": POD, "NodeNames": ["a"]}).json() == []
    assert client.post("/preempt", json={"Pod": POD}).json() == {"NodeNameToMetaVictims": {}}
    metrics = client.get("/metrics").text
    assert 'grove_extender_requests_rejected_total{cause="internal",verb="filter"} 1.0' in metrics


def test_probes_metrics_and_debug(client: SyncClient, echo: EchoExtender) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    echo.is_ready = False
    assert client.get("/readyz").status_code == 503
    client.post("/filter", json={"Pod": POD, "NodeNames": ["a"]})
    assert 'grove_extender_request_seconds_count{verb="filter"} 1.0' in client.get("/metrics").text
    assert client.get("/debug/gangs").json() == {"gangs": [{"gang": "default/g", "state": "Planned"}]}


def test_each_app_has_its_own_registry(echo: EchoExtender) -> None:
    first, second = SyncClient(create_app(echo)), SyncClient(create_app(echo))
    first.post("/filter", json={"Pod": POD, "NodeNames": ["a"]})
    assert 'grove_extender_request_seconds_count{verb="filter"} 1.0' in first.get("/metrics").text
    assert 'grove_extender_request_seconds_count{verb="filter"} 0.0' in second.get("/metrics").text


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


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(["/filter", "/prioritize", "/bind", "/preempt"]), body=_bodies)
def test_fuzzed_bodies_never_yield_a_server_error(path: str, body: Any) -> None:
    reply = _fuzz_client.post(path, content=json.dumps(body))
    assert reply.status_code in (200, 400), (reply.status_code, reply.text)
    assert isinstance(reply.json(), (dict, list))
