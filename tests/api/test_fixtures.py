"""The extender wire models against what a real kube-scheduler v1.36 sent and read (tests/fixtures).

Requests must parse with the model their path names; replies must serialise with the PascalCase keys the Go
types in ``k8s.io/kube-scheduler/extender/v1`` decode (they carry no json tags), holding the same values the
recorder answered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from api.core import Pod
from api.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriorityList,
)
from api.grove import LABEL_PODGANG
from tests.conftest import FIXTURES as FIXTURES_ROOT

FIXTURES = FIXTURES_ROOT / "kube-scheduler-v1.36"
FILES = sorted(FIXTURES.glob("node-*/*.json"))

REQUEST_MODEL: dict[str, type[BaseModel]] = {
    "/filter": ExtenderArgs,
    "/prioritize": ExtenderArgs,
    "/bind": ExtenderBindingArgs,
    "/preempt": ExtenderPreemptionArgs,
}
# Field names of the Go reply types: any key outside these would be ignored by kube-scheduler, i.e. a bug.
GO_FILTER_RESULT = {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
GO_BINDING_RESULT = {"Error"}
GO_PREEMPTION_RESULT = {"NodeNameToMetaVictims"}
GO_HOST_PRIORITY = {"Host", "Score"}


def _load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def _by_verb(verb: str) -> list[Any]:
    return [pytest.param(path, id=f"{path.parent.name}/{path.name}") for path in FILES if path.stem.endswith(verb)]


def test_every_verb_is_recorded_in_both_modes() -> None:
    # 21 calls per mode: 7 filters, 6 prioritizes, 7 binds, 1 preempt (README of the fixtures).
    assert len(FILES) == 42
    assert {_load(path)["path"] for path in FILES} == set(REQUEST_MODEL)


@pytest.mark.parametrize("path", [pytest.param(p, id=f"{p.parent.name}/{p.name}") for p in FILES])
def test_every_request_parses_with_the_model_its_path_names(path: Path) -> None:
    fixture = _load(path)
    model = REQUEST_MODEL[fixture["path"]]
    parsed = model.model_validate(fixture["request"])
    if isinstance(parsed, ExtenderArgs | ExtenderPreemptionArgs):
        assert parsed.Pod.metadata.name
        assert parsed.Pod.metadata.uid
        assert parsed.Pod.key == f"{parsed.Pod.metadata.namespace}/{parsed.Pod.metadata.name}"
        # The extender reads only the identity; the whole Pod is what its watch reads of the same pod.
        whole = Pod.model_validate(fixture["request"]["Pod"])
        assert whole.spec.schedulerName == "grove"
        assert whole.requests()["cpu"] >= 1000  # every recorded pod asks at least one whole CPU


@pytest.mark.parametrize("path", _by_verb("filter") + _by_verb("prioritize"))
def test_extender_args_follow_the_node_cache_mode(path: Path) -> None:
    args = ExtenderArgs.model_validate(_load(path)["request"])
    if path.parent.name == "node-names":
        assert args.Nodes is None
        assert args.NodeNames is not None
    else:
        assert args.NodeNames is None
        assert args.Nodes is not None
        node = args.Nodes.items[0]
        assert node.allocatable()["nvidia.com/gpu"] == 8
        assert node.metadata.labels["nvidia.com/gpu.clique"].startswith("cluster-1.")
    assert set(args.candidate_names()) <= {"gpu-node-0", "gpu-node-1", "gpu-node-2"}


def test_gang_members_carry_their_podgang_label() -> None:
    pod = Pod.model_validate(_load(FIXTURES / "node-names" / "003-filter.json")["request"]["Pod"])
    assert pod.metadata.labels[LABEL_PODGANG] == "infer-0"
    # 8 cpu, 16Gi, 4 GPUs, plus the pod slot kube-scheduler counts.
    assert pod.requests() == {"cpu": 8000, "memory": 16 * 2**30, "nvidia.com/gpu": 4, "pods": 1}


@pytest.mark.parametrize("path", _by_verb("filter"))
def test_filter_reply_serialises_with_the_keys_kube_scheduler_reads(path: Path) -> None:
    fixture = _load(path)
    recorded = fixture["recorder_response"]
    reply = ExtenderFilterResult.model_validate(recorded)
    wire = reply.model_dump(mode="json")
    assert set(recorded) <= set(wire) <= GO_FILTER_RESULT
    assert wire["NodeNames"] == recorded["NodeNames"]
    assert wire["FailedNodes"] == recorded["FailedNodes"]
    assert wire["Error"] == recorded["Error"]
    if recorded["Nodes"] is None:
        assert wire["Nodes"] is None
    else:
        assert [n["metadata"]["name"] for n in wire["Nodes"]["items"]] == [
            n["metadata"]["name"] for n in recorded["Nodes"]["items"]
        ]
    # The pass-through recorder returned every candidate: our reading of the request agrees with its names.
    args = ExtenderArgs.model_validate(fixture["request"])
    returned = wire["NodeNames"] or [n["metadata"]["name"] for n in wire["Nodes"]["items"]]
    assert returned == args.candidate_names()


@pytest.mark.parametrize("path", _by_verb("prioritize"))
def test_prioritize_reply_is_a_bare_array_of_host_scores(path: Path) -> None:
    recorded = _load(path)["recorder_response"]
    wire = HostPriorityList.model_validate(recorded).model_dump(mode="json")
    assert wire == recorded
    assert all(set(entry) == GO_HOST_PRIORITY for entry in wire)


def test_prioritize_scores_outside_zero_to_ten_are_refused() -> None:
    with pytest.raises(ValueError, match="Score"):
        HostPriorityList.model_validate([{"Host": "n", "Score": 11}])


@pytest.mark.parametrize("path", _by_verb("bind"))
def test_bind_request_and_reply(path: Path) -> None:
    fixture = _load(path)
    args = ExtenderBindingArgs.model_validate(fixture["request"])
    assert args.model_dump() == fixture["request"]
    wire = ExtenderBindingResult.model_validate(fixture["recorder_response"]).model_dump(mode="json")
    assert set(wire) <= GO_BINDING_RESULT
    assert wire["Error"] == ""  # kube-scheduler treats an empty Error as success
    assert json.loads(ExtenderBindingResult(Error="gang not ready").model_dump_json()) == {"Error": "gang not ready"}


@pytest.mark.parametrize("path", _by_verb("preempt"))
def test_preempt_request_and_reply(path: Path) -> None:
    fixture = _load(path)
    args = ExtenderPreemptionArgs.model_validate(fixture["request"])
    recorded = fixture["recorder_response"]
    # Whichever map the mode filled, the victims by UID are the ones the recorder echoed back.
    expected = {node: [pod["UID"] for pod in v["Pods"]] for node, v in recorded["NodeNameToMetaVictims"].items()}
    assert args.victim_uids() == expected
    if path.parent.name == "node-names":
        assert args.NodeNameToVictims is None
    else:
        assert args.NodeNameToMetaVictims is None
    wire = ExtenderPreemptionResult.model_validate(recorded).model_dump(mode="json")
    assert set(wire) == GO_PREEMPTION_RESULT
    assert wire == recorded
