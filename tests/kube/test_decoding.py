"""Decoding watch events and list pages: our pods whole, the others as capacity, bad objects named and skipped."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from api.core import Node, Pod
from scheduler.kube.decoding import ModelDecoder, PodDecoder
from scheduler.kube.foreign import ForeignPod, OurPods
from scheduler.kube.listing import NODES, PODS
from tests.builders import make_node, make_pod


def decoder() -> PodDecoder:
    return PodDecoder(keeps_whole=OurPods(frozenset({"grove"})).include, stamp=PODS.stamp)


def event(event_type: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}).encode()


@pytest.mark.parametrize(
    ("pod", "whole"),
    [
        pytest.param(make_pod("p").scheduler("grove"), True, id="our-scheduler"),
        pytest.param(make_pod("p").scheduler("default-scheduler").gang("g"), True, id="gang-member-of-another"),
        pytest.param(make_pod("p").scheduler("default-scheduler"), False, id="another-scheduler"),
        pytest.param(make_pod("p").scheduler(""), False, id="no-scheduler-name"),
    ],
)
def test_ours_are_kept_whole_the_others_as_capacity(pod: Any, whole: bool) -> None:
    raw = pod.cpu("2").on("n1").phase("Running").dict()
    raw["metadata"]["resourceVersion"] = "42"
    change = decoder().change(event("MODIFIED", raw))
    assert change is not None
    event_type, obj, version = change
    assert (event_type, version) == ("MODIFIED", "42")
    if whole:
        assert isinstance(obj, Pod) and obj.spec.nodeName == "n1"
    else:
        # 2 cpu = 2000 millicores, plus the pod's own slot
        assert obj == ForeignPod(
            namespace="default", name="p", node="n1", phase="Running", requests=obj.requests, uid="uid-p"
        )
        assert isinstance(obj, ForeignPod) and obj.requests == {"cpu": 2000, "pods": 1}


@pytest.mark.parametrize("path", ["event", "page", "parse"])
def test_our_pods_keep_who_wrote_their_nomination(path: str) -> None:
    """What a new leader reads to tell our nominations from kube-scheduler's (``nominated_by_us``), the way
    kube-apiserver v1.36 serves a pod after our patch of its status (fields owned left out: not read)."""
    from scheduler.kube.nominations import nominated_by_us

    raw = make_pod("p").scheduler("grove").dict()
    raw["status"]["nominatedNodeName"] = "n1"
    raw["metadata"]["managedFields"] = [
        {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:schedulerName": {}}}},
        {"manager": "grove-extender", "operation": "Update", "apiVersion": "v1", "subresource": "status",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:nominatedNodeName": {}}}},
    ]  # fmt: skip
    d = decoder()
    if path == "event":
        change = d.change(event("ADDED", raw))
        assert change is not None
        obj = change[1]
    elif path == "page":
        obj = d.page(json.dumps({"metadata": {}, "items": [raw]}).encode())[0][0]
    else:
        obj = d.parse(raw)
    assert isinstance(obj, Pod) and nominated_by_us(obj)
    assert "managedFields" not in obj.model_dump(), "read, never written back"


@pytest.mark.parametrize("path", ["event", "page", "parse"])
def test_another_schedulers_pod_keeps_what_preemption_reads(path: str) -> None:
    """A higher-priority gang may evict it: its UID (the eviction's precondition), its priority (the rule) and
    whether it is already terminating (evicted once, it must not count as a victim again)."""
    raw = make_pod("p").scheduler("default-scheduler").uid("u-7").priority(250).deleting().on("n1").dict()
    pods = decoder()
    if path == "event":
        change = pods.change(event("MODIFIED", raw))
        assert change is not None
        obj: object = change[1]
    elif path == "page":
        (obj,), _ = pods.page(json.dumps({"metadata": {}, "items": [raw]}).encode())
    else:
        obj = pods.parse(raw)
    assert isinstance(obj, ForeignPod)
    assert (obj.uid, obj.priority, obj.deleting) == ("u-7", 250, True)
    plain = pods.parse(make_pod("q").scheduler("default-scheduler").on("n1").dict())
    assert isinstance(plain, ForeignPod) and (plain.priority, plain.deleting) == (0, False)


def test_a_bad_quantity_is_named_and_the_pod_skipped(caplog: pytest.LogCaptureFixture) -> None:
    raw = make_pod("p").scheduler("default-scheduler").req("nvidia.com/gpu", "1e40").on("n1").dict()
    pods = decoder()
    assert pods.change(event("ADDED", raw)) is None, "the fast path hands it to the dict path"
    with caplog.at_level(logging.WARNING):
        assert pods.parse(raw) is None
    assert "spec.containers.0.resources.requests" in caplog.text and "nvidia.com/gpu" in caplog.text


def test_another_schedulers_pod_counts_even_if_what_we_do_not_read_is_malformed() -> None:
    # The full model refuses a toleration that is not a list; as capacity, only requests, node and phase matter.
    raw = make_pod("p").scheduler("default-scheduler").gpus(2).on("n1").dict()
    raw["spec"]["tolerations"] = "not a list"
    with pytest.raises(ValueError, match="tolerations"):
        Pod.model_validate(raw)
    change = decoder().change(event("ADDED", raw))
    assert change is not None and isinstance(change[1], ForeignPod) and change[1].requests["nvidia.com/gpu"] == 2


def test_a_page_mixes_ours_and_others_and_skips_only_the_bad(caplog: pytest.LogCaptureFixture) -> None:
    items = [
        make_pod("ours").gpus(1).dict(),
        make_pod("theirs").scheduler("default-scheduler").cpu("1").on("n1").dict(),
        make_pod("broken").scheduler("default-scheduler").req("cpu", "-4").dict(),
    ]
    body = json.dumps({"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": items}).encode()
    with caplog.at_level(logging.WARNING):
        objects, metadata = decoder().page(body)
    assert metadata == {"resourceVersion": "7"}
    assert [(type(o).__name__, o.key) for o in objects] == [("Pod", "default/ours"), ("ForeignPod", "default/theirs")]
    assert "default/broken" in caplog.text and "negative" in caplog.text


def test_pods_with_equal_requests_share_one_vector() -> None:
    pods = decoder()
    first, second = (
        pods.change(event("ADDED", make_pod(name).scheduler("web").cpu("1").memory("2Gi").dict()))
        for name in ("a", "b")
    )
    assert first is not None and second is not None
    assert first[1].requests is second[1].requests  # type: ignore[union-attr]


def test_bookmarks_and_errors_are_left_to_the_dict_path() -> None:
    pods = decoder()
    assert pods.change(b'{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}') is None
    assert pods.change(b'{"type": "ERROR", "object": {"code": 410}}') is None


def test_an_unreadable_node_stays_known_and_unusable(caplog: pytest.LogCaptureFixture) -> None:
    nodes = ModelDecoder(Node, stamp=NODES.stamp)
    raw = make_node("n1").alloc("nvidia.com/gpu", "1e40").dict()
    assert nodes.change(event("MODIFIED", raw)) is None
    with caplog.at_level(logging.WARNING):
        parsed = nodes.parse(raw)
    assert isinstance(parsed, Node) and parsed.name == "n1" and parsed.spec.unschedulable
    assert "status.allocatable" in caplog.text
