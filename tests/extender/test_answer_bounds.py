"""Every verb answers within a bound that follows from its request's: at most its growth times the request's
length plus a slack (``scheduler.extender.coordinator.answers``), for requests written as tightly as JSON allows
(the shortest distinct names, the emptiest victims), filter's as long as the app accepts, and for reasons the
cluster makes long. A refusal still names every node asked about as failed, never unresolvable, and shows the
reason in full on some."""

from __future__ import annotations

import itertools
import json
import string
from collections.abc import Iterator
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic_core import to_json

from api.core import Pod
from api.extender import ExtenderFilterResult
from api.http.body import DEFAULT_MAX_BODY_BYTES
from placement.request import ClusterView, GangRequest, Result, SolveOptions, Status
from scheduler.extender.coordinator.answers import (
    ANSWER_SLACK,
    CUT,
    FILTER_GROWTH,
    PREEMPT_GROWTH,
    PRIORITIZE_GROWTH,
    REASON_CHARS,
    REASON_SLACK,
    SHORT_REASON,
    capped,
    failed_nodes,
)
from tests.extender_support import Harness, SyncClient, bind_body, filter_body, gang, harness, node

NODES = ["a0", "a1", "b0"]


def _compact(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _shortest_names() -> Iterator[str]:
    """Distinct names, shortest first: the most nodes a request of a given length can name."""
    alphabet = string.ascii_lowercase + string.digits
    for length in itertools.count(1):
        for letters in itertools.product(alphabet, repeat=length):
            yield "".join(letters)


def _fill(start: bytes, end: bytes, items: Iterator[bytes], size: int = DEFAULT_MAX_BODY_BYTES) -> bytes:
    """``start`` + items joined by commas + ``end``, as many items as fit in ``size`` (the app's largest body)."""
    room = size - len(start) - len(end)
    taken: list[bytes] = []
    for item in items:
        room -= len(item) + 1
        if room < 0:
            break
        taken.append(item)
    return start + b",".join(taken) + end


def _names_request(pod_body: dict[str, Any]) -> bytes:
    start = _compact({"Pod": pod_body, "Nodes": None})[:-1] + b',"NodeNames":['
    return _fill(start, b"]}", (to_json(name) for name in itertools.chain(NODES, _shortest_names())))


def _refused_gang() -> tuple[list[Pod], Harness]:
    pods, pg = gang("g", workers=2, gpus=16)  # 16 GPUs on nodes of 8: refused on every node
    return pods, harness(nodes=[node(n) for n in NODES], pods=pods, podgangs=[pg])


def test_a_maximal_filter_of_unknown_names_is_answered_within_the_bound() -> None:
    pods, h = _refused_gang()
    request = _names_request(filter_body(pods[0], [])["Pod"])
    reply = SyncClient(h.app).post("/filter", content=request, headers={"content-type": "application/json"})
    assert reply.status_code == 200
    assert len(reply.content) <= FILTER_GROWTH * len(request) + ANSWER_SLACK, len(reply.content) / len(request)
    answer = reply.json()
    asked = json.loads(request)["NodeNames"]
    # kube-scheduler's view of every node is what it was: failed (a preemption candidate), none unresolvable.
    assert answer["NodeNames"] == [] and answer["Error"] == "" and answer["FailedAndUnresolvableNodes"] == {}
    assert list(answer["FailedNodes"]) == list(dict.fromkeys(asked))
    reasons = set(answer["FailedNodes"].values())
    assert reasons == {answer["FailedNodes"]["a0"], SHORT_REASON} and "needs 2 pods" in answer["FailedNodes"]["a0"]


def test_a_reason_the_cluster_makes_long_is_cut_in_filter_and_bind() -> None:
    # A gang of many long group names refused as a whole: a reason naming every group (explain_infeasible's).
    groups = ", ".join(f"group-{i:04d}-" + "x" * 52 for i in range(10_000))
    reason = f"capacity adds up, but no assignment of groups {groups} to nodes fits"

    def solver(request: GangRequest, view: ClusterView, options: SolveOptions) -> Result:
        return Result(status=Status.INFEASIBLE, reason=reason)

    pods, pg = gang("g", workers=2, gpus=8)
    h = harness(nodes=[node(n) for n in NODES], pods=pods, podgangs=[pg], solver=solver)
    client = SyncClient(h.app)
    request = _compact(filter_body(pods[0], NODES))
    reply = client.post("/filter", content=request, headers={"content-type": "application/json"})
    assert len(reply.content) <= FILTER_GROWTH * len(request) + ANSWER_SLACK
    failed = reply.json()["FailedNodes"]
    assert set(failed) == set(NODES) and set(failed.values()) == {capped(reason)}
    assert failed["a0"].startswith("capacity adds up") and failed["a0"].endswith(CUT)
    bind = client.post("/bind", json=bind_body(pods[0], "a0")).json()
    assert bind["Error"] and len(bind["Error"]) <= REASON_CHARS


SCANNED_BYTES = 1 << 19
"""prioritize and preempt hold no reason, so a request of this length already shows their growth past the slack."""


def _post(client: SyncClient, verb: str, request: bytes) -> bytes:
    reply = client.post(f"/{verb}", content=request, headers={"content-type": "application/json"})
    assert reply.status_code == 200
    return reply.content


def test_prioritize_of_the_shortest_names_is_answered_within_the_bound() -> None:
    _, h = _refused_gang()
    request = _fill(b'{"Pod":{},"NodeNames":[', b"]}", (to_json(name) for name in _shortest_names()), SCANNED_BYTES)
    answer = _post(SyncClient(h.app), "prioritize", request)
    assert len(answer) <= PRIORITIZE_GROWTH * len(request) + REASON_SLACK, len(answer) / len(request)
    assert [score["Host"] for score in json.loads(answer)] == json.loads(request)["NodeNames"]


def test_preempt_of_the_emptiest_victims_is_answered_within_the_bound() -> None:
    # A preemptor the extender does not know: kube-scheduler's proposal comes back whole, defaults written out.
    _, h = _refused_gang()
    client = SyncClient(h.app)
    for key, victims in (
        ("NodeNameToMetaVictims", b"{}"),
        ("NodeNameToMetaVictims", b'{"Pods":[{"UID":""}]}'),
        ("NodeNameToVictims", b'{"Pods":[{}]}'),
    ):
        entries = (to_json(name) + b":" + victims for name in _shortest_names())
        request = _fill(b'{"Pod":{},"%s":{' % key.encode(), b"}}", entries, SCANNED_BYTES)
        answer = _post(client, "preempt", request)
        assert len(answer) <= PREEMPT_GROWTH * len(request) + REASON_SLACK, (key, victims, len(answer) / len(request))
        assert len(json.loads(answer)["NodeNameToMetaVictims"]) == len(json.loads(request)[key])


@settings(max_examples=300, deadline=None)
@example(names=list(itertools.islice(_shortest_names(), 4000)), reason="", budget=0)  # every node past the budget
@given(
    # Short names, the cheapest a request can spell, and characters JSON escapes or spells in several bytes.
    names=st.lists(
        st.text(st.sampled_from(string.ascii_letters + '"\\\x01\u00e9\U0001f600'), max_size=2), max_size=400
    ),
    reason=st.text(max_size=2 * REASON_CHARS),
    budget=st.integers(min_value=0, max_value=20_000),
)
def test_any_refusal_is_within_the_bound(names: list[str], reason: str, budget: int) -> None:
    request = b'{"Pod":{},"NodeNames":' + to_json(names) + b"}"  # the shortest JSON that names them
    failed = failed_nodes(names, reason, budget=budget)
    answer = to_json(ExtenderFilterResult(NodeNames=[], FailedNodes=failed))
    # The slack as derived: the keys of an empty answer, and the full reasons (one, if it alone exceeds the budget).
    full_reasons = max(budget, len(to_json(capped(reason))) + 1)
    assert full_reasons <= budget + REASON_SLACK
    slack = len(to_json(ExtenderFilterResult(NodeNames=[]))) + full_reasons
    assert len(answer) <= FILTER_GROWTH * len(request) + slack
    assert list(failed) == list(dict.fromkeys(names))
    assert set(failed.values()) <= {capped(reason), SHORT_REASON}
    if names:
        assert failed[names[0]] == capped(reason)  # the event always shows the reason
