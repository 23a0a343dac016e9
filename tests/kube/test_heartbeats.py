"""Node events that change nothing the store reads are recognised before the model decode, and nothing else is."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from api.core import Node
from scheduler.kube.decoding import Unchanged
from scheduler.kube.heartbeats import NodeDecoder
from tests.kube import objects as k


def api_node(name: str = "n1", rv: str = "10") -> dict[str, Any]:
    """A Node as kube-apiserver sends it: conditions, images and managedFields that the model does not keep."""
    node = k.node(name, gpus=4)
    node["status"]["capacity"] = {**node["status"]["allocatable"], "cpu": "104"}  # a dict of its own, as sent
    node["metadata"].update(resourceVersion=rv, uid="u-1", annotations={"node.alpha.kubernetes.io/ttl": "0"})
    node["metadata"]["managedFields"] = [{"manager": "kubelet", "time": "2026-11-26T08:00:00Z"}]
    node["status"]["conditions"] = [
        {"type": t, "status": s, "lastHeartbeatTime": "2026-11-26T08:00:00Z"}
        for t, s in (("Ready", "True"), ("MemoryPressure", "False"))
    ]
    node["status"]["images"] = [{"names": ["nvcr.io/nvidia/pytorch:24.01"], "sizeBytes": 9_000_000_000}]
    return node


def line(event_type: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}).encode()


def heartbeat(node: dict[str, Any]) -> None:
    for condition in node["status"]["conditions"]:
        condition["lastHeartbeatTime"] = "2026-11-26T08:00:10Z"
    node["metadata"]["managedFields"][0]["time"] = "2026-11-26T08:00:10Z"


def set_in(*path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(node: dict[str, Any]) -> None:
        target = node
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value

    return mutate


MUTATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "heartbeat": heartbeat,
    "image pulled": lambda n: n["status"]["images"].append({"names": ["busybox"], "sizeBytes": 1}),
    "label": set_in("metadata", "labels", "nvidia.com/gpu.clique", value="c-2"),
    "annotation": set_in("metadata", "annotations", "example.com/a", value="b"),
    "cordoned": set_in("spec", "unschedulable", value=True),
    "taint": set_in("spec", "taints", value=[{"key": "gpu", "effect": "NoSchedule"}]),
    "allocatable": set_in("status", "allocatable", "nvidia.com/gpu", value="3"),
    "capacity": set_in("status", "capacity", "nvidia.com/gpu", value="5"),
    "deleting": set_in("metadata", "deletionTimestamp", value="2026-11-26T08:00:10Z"),
    "new uid": set_in("metadata", "uid", value="u-2"),
}
UNREAD = {"heartbeat", "image pulled"}  # what the Node model does not keep


@pytest.mark.parametrize("what", list(MUTATIONS))
def test_only_changes_to_what_the_model_keeps_are_decoded(what: str) -> None:
    nodes = NodeDecoder()
    before = api_node()
    assert not isinstance(nodes.change(line("ADDED", before)), Unchanged)
    after = copy.deepcopy(before)
    MUTATIONS[what](after)
    after["metadata"]["resourceVersion"] = "11"
    outcome = nodes.change(line("MODIFIED", after))
    if what in UNREAD:
        assert outcome == Unchanged("11"), "the watch still resumes from the new version"
    else:
        assert outcome is not None and not isinstance(outcome, Unchanged)
        event_type, node, version = outcome
        assert (event_type, version) == ("MODIFIED", "11") and isinstance(node, Node)
    # Either way the next heartbeat on top of it is recognised.
    heartbeat(after)
    after["metadata"]["resourceVersion"] = "12"
    assert nodes.change(line("MODIFIED", after)) == Unchanged("12")


@pytest.mark.parametrize(
    "forget",
    [
        pytest.param(lambda d, n: d.page(json.dumps({"metadata": {}, "items": [n]}).encode()), id="relist"),
        pytest.param(lambda d, n: d.change(line("DELETED", n)), id="deleted"),
        pytest.param(lambda d, n: d.change(b'{"type": "MODIFIED", "object": {"metadata": 7}}'), id="unreadable"),
    ],
)
def test_what_it_remembers_is_forgotten_when_the_store_may_hold_another_version(
    forget: Callable[[NodeDecoder, dict[str, Any]], object],
) -> None:
    nodes = NodeDecoder()
    node = api_node()
    nodes.change(line("ADDED", node))
    forget(nodes, node)
    # The same bytes again: decoded, since the store may now hold something else (a relist, a stand-in).
    outcome = nodes.change(line("MODIFIED", node))
    assert outcome is not None and not isinstance(outcome, Unchanged)


def _kept(raw: dict[str, Any]) -> Node:
    node = Node.model_validate(raw)
    return node.model_copy(update={"metadata": node.metadata.model_copy(update={"resourceVersion": ""})})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(sorted(MUTATIONS)), max_size=6))
def test_unchanged_only_when_the_model_would_be_equal(steps: list[str]) -> None:
    """Oracle: the full pydantic decode. ``Unchanged`` must never hide a difference the model would keep."""
    nodes = NodeDecoder()
    node = api_node()
    nodes.change(line("ADDED", node))
    stored = _kept(node)
    for rv, step in enumerate(steps, start=20):
        node = copy.deepcopy(node)
        MUTATIONS[step](node)
        node["metadata"]["resourceVersion"] = str(rv)
        outcome = nodes.change(line("MODIFIED", node))
        if isinstance(outcome, Unchanged):
            assert _kept(node) == stored
        else:
            assert outcome is not None
            stored = _kept(node)
