"""Snapshots load from JSON, YAML and gzip; a bad one fails naming the item and the field."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.snapshot import SnapshotError, dump_snapshot, load_snapshot, parse_snapshot
from tests.builders import make_node, make_pod, make_podgang


def _items() -> list[dict[str, Any]]:
    return [
        make_node("n1").gpus(8).dict(),
        make_pod("bound").gpus(4).on("n1").dict(),
        make_pod("w0").gpus(4).gang("g").dict(),
        make_podgang("g").group("c", pods=["w0"]).dict(),
    ]


@pytest.mark.parametrize("name", ["snap.json", "snap.json.gz", "snap.yaml", "snap.yaml.gz"])
def test_round_trip_through_every_format(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    dump_snapshot(_items(), path)
    snapshot = load_snapshot(path)
    assert [node.name for node in snapshot.nodes] == ["n1"]
    assert [pod.key for pod in snapshot.pods] == ["default/bound", "default/w0"]
    assert [gang.key for gang in snapshot.podgangs] == ["default/g"]


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        pytest.param({"kind": "Secret", "metadata": {"name": "s"}}, "items[1] (Secret s): kind 'Secret'", id="secret"),
        pytest.param({"kind": 5, "metadata": {"name": "x"}}, "items[1] (5 x): kind 5", id="a-number"),
        pytest.param({"kind": ["Pod"]}, "kind ['Pod']", id="a-list"),
        pytest.param({"kind": "pod", "metadata": {"name": "p"}}, "kind 'pod'", id="wrong-case"),
    ],
)
def test_an_item_of_a_kind_a_snapshot_does_not_hold_is_refused(item: dict[str, Any], needle: str) -> None:
    document = {"kind": "List", "items": [make_node("n1").gpus(8).dict(), item]}
    with pytest.raises(SnapshotError, match="is not one a snapshot holds") as caught:
        parse_snapshot(document)
    assert needle in str(caught.value)
    assert "Node, Pod, PodGang, PriorityClass, PodCliqueSet, ClusterTopologyBinding" in str(caught.value)


def test_kubectl_style_yaml_list(tmp_path: Path) -> None:
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": _items()[:2]}))
    assert len(load_snapshot(path).pods) == 1
    gz = tmp_path / "dump"  # gzip is recognised by its bytes, not its name
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert len(load_snapshot(gz).nodes) == 1


def _with(item: dict[str, Any], at: int = 0) -> dict[str, Any]:
    items = _items()
    items.insert(at, item)
    return {"kind": "List", "items": items}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        pytest.param({"kind": "Pod", "metadata": {}}, "top level must be a Kubernetes List.*'Pod'", id="not-a-list"),
        pytest.param([1, 2], "top level must be a Kubernetes List.*'list'", id="bare-array"),
        pytest.param({"kind": "List", "items": {}}, "'items' must be a list", id="items-not-a-list"),
        pytest.param(_with({"metadata": {"name": "x", "namespace": "ns"}}, 1), r"items\[1\] \(\? ns/x\) has no 'kind'"),
        pytest.param(_with("text", 2), r"items\[2\] is not an object", id="item-not-object"),
        pytest.param(
            _with(make_node("n2").cpu("ninety").dict(), 0),
            r"items\[0\] \(Node n2\): status\.allocatable: .*cpu: 'ninety' is not a quantity",
            id="broken-node-quantity",
        ),
        pytest.param(
            _with(make_pod("p").memory("1Gb").dict(), 3),
            r"items\[3\] \(Pod default/p\): spec\.containers\.0\.resources\.requests: .*memory: '1Gb'",
            id="broken-pod-quantity",
        ),
        pytest.param(
            _with({**make_node("n4").dict(), "status": {"allocatable": {"cpu": None}}}),
            r"items\[0\] \(Node n4\): status\.allocatable: .*cpu: None is not a quantity",
            id="null-quantity",
        ),
        pytest.param(
            _with(make_pod("p").on("ghost").dict()),
            r"Pod default/p: spec\.nodeName 'ghost' is not a Node in the snapshot",
            id="bound-to-missing-node",
        ),
        pytest.param(_with(make_node("n1").dict()), r"Node n1: metadata\.name appears twice", id="duplicate-node"),
        pytest.param(
            _with({"kind": "PodGang", "metadata": {"name": "g2", "namespace": "d"}, "spec": {}}),
            r"\(PodGang d/g2\): spec\.podgroups: Field required",
            id="podgang-without-podgroups",
        ),
        pytest.param(
            _with({**make_node("n3").dict(), "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}}),
            r"\(Node n3\): spec\.taints\.0\.effect",
            id="bad-taint-effect",
        ),
    ],
)
def test_bad_snapshots_name_the_item_and_field(document: Any, message: str) -> None:
    with pytest.raises(SnapshotError, match=message):
        parse_snapshot(document)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="No such file"):
        load_snapshot(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "List", "items": [')
    with pytest.raises(SnapshotError, match="not valid JSON or YAML"):
        load_snapshot(broken)


def test_dump_writes_a_list(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    dump_snapshot(_items()[:1], path)
    assert json.loads(path.read_text())["kind"] == "List"


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        pytest.param(b"\x1f\x8b\x08\x00broken", "not valid gzip", id="truncated-gzip"),
        pytest.param(b"\xff\xfe binary", "not gzip, JSON or YAML text", id="not-utf8"),
        pytest.param(b"\xff\xfe\x00binary", "holds a NUL byte at byte 2: not text", id="binary"),
    ],
)
def test_undecodable_bytes(tmp_path: Path, raw: bytes, said: str) -> None:
    path = tmp_path / "snap"
    path.write_bytes(raw)
    with pytest.raises(SnapshotError, match=said):
        load_snapshot(path)
