"""``grove-extender snapshot inspect``: the figures, the JSON shape, and one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scheduler.cli import main
from scheduler.snapshot import dump_snapshot
from tests.builders import make_node, make_pod, make_podgang, make_topology_binding

CLIQUE = "nvidia.com/gpu.clique"
RACK = "example.com/rack"


def _items() -> list[dict[str, Any]]:
    return [
        make_node("a").gpus(4).label(CLIQUE, "u1.0").label(RACK, "r1").dict(),
        make_node("b").gpus(4).label(CLIQUE, "u1.0").label(RACK, "r1").dict(),
        make_node("c").gpus(8).label(RACK, "r2").unschedulable().dict(),
        make_pod("busy").gpus(3).on("a").dict(),
        make_pod("done").gpus(4).on("b").phase("Succeeded").dict(),
        make_pod("w0").gpus(4).gang("g").dict(),
        make_pod("w1").gpus(4).gang("g").gated().dict(),
        make_pod("l0").cpu("1").gang("g").dict(),
        make_podgang("g").group("g-l", pods=["l0"]).group("g-w", pods=["w0", "w1", "w2"], min_replicas=2).dict(),
        make_podgang("bound-gang").group("x", pods=["busy"]).dict(),
        make_pod("o0").gpus(2).gang("orphan").dict(),
        make_pod("s0").gpus(1).gang("short").dict(),
        make_podgang("short").group("s", pods=["s0", "s1"]).dict(),
        make_pod("loose").gpus(1).dict(),
    ]


def _inspect(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    path = tmp_path / "snap.json"
    dump_snapshot(_items(), path)
    assert main(["snapshot", "inspect", str(path), "--json", *extra]) == 0
    summary: dict[str, Any] = json.loads(capsys.readouterr().out)
    return summary


def test_json_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = _inspect(tmp_path, capsys)
    assert summary["version"] == 2
    assert (summary["nodes"], summary["unschedulable_nodes"], summary["bound_pods"]) == (3, 1, 1)
    # 4 + 4 + 8 GPUs; busy holds 3 of a's 4, the succeeded pod holds nothing: 16 − 3 free
    assert summary["gpus"] == {"total": 16, "free": 13}
    assert [level["name"] for level in summary["levels"]] == ["nvlink", "host"]
    assert summary["domains"]["nvlink"] == [
        {"domain": "<unknown>", "nodes": 1, "gpus_total": 8, "gpus_free": 8},
        {"domain": "u1.0", "nodes": 2, "gpus_total": 8, "gpus_free": 5},
    ]
    gangs = {gang["gang"]: gang for gang in summary["pending_gangs"]}
    assert set(gangs) == {"default/g", "default/orphan", "default/short"}  # bound-gang is fully bound
    # g: w2 is referenced but not created; w0 and the gated w1 meet g-w's minReplicas of 2 without it, so the
    # summary stands: 4 GPUs × (w0, w1) = 8, all of them guaranteed (l0 asks none)
    assert gangs["default/g"]["error"] is None
    assert (gangs["default/g"]["pods"], gangs["default/g"]["min_pods"], gangs["default/g"]["gated_pods"]) == (4, 3, 1)
    assert (gangs["default/g"]["gpus"], gangs["default/g"]["min_gpus"]) == (8, 8)
    # short: both pods guaranteed and s1 not created, so the gang cannot be planned yet and the reason names s1
    assert "not created: default/s1" in gangs["default/short"]["error"]
    assert gangs["default/orphan"] == {
        "gang": "default/orphan",
        "podgang": False,
        "groups": 1,
        "pods": 1,
        "min_pods": 1,
        "gated_pods": 0,
        "gpus": 2,
        "min_gpus": 2,
        "error": "no PodGang default/orphan in the snapshot",
    }
    assert summary["pending_pods_without_gang"] == 1


def test_gpu_demand_of_a_complete_gang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = [*_items(), make_pod("w2").gpus(4).gang("g").dict()]
    path = tmp_path / "snap.json"
    dump_snapshot(items, path)
    assert main(["snapshot", "inspect", str(path), "--json"]) == 0
    gang = next(g for g in json.loads(capsys.readouterr().out)["pending_gangs"] if g["gang"] == "default/g")
    # 3 workers × 4 GPUs = 12; guaranteed 2 × 4 = 8; the leader asks none
    assert (gang["gpus"], gang["min_gpus"], gang["error"]) == (12, 8, None)


def test_levels_from_binding_and_from_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snap.json"
    dump_snapshot([*_items(), make_topology_binding("t", [("rack", RACK)]).dict()], path)
    assert main(["snapshot", "inspect", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [level["name"] for level in summary["levels"]] == ["rack", "host"]
    assert [d["gpus_free"] for d in summary["domains"]["rack"]] == [5, 8]
    levels = tmp_path / "levels.json"
    levels.write_text(json.dumps([{"domain": "nvl", "key": CLIQUE}]))
    assert main(["snapshot", "inspect", str(path), "--json", "--levels", str(levels)]) == 0
    assert [level["name"] for level in json.loads(capsys.readouterr().out)["levels"]] == ["nvl", "host"]


def test_human_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snap.json"
    dump_snapshot(_items(), path)
    assert main(["snapshot", "inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "3 nodes (1 unschedulable), 16 GPUs, 13 free, 1 bound pods" in out
    assert "free GPUs per nvlink domain" in out
    assert "default/orphan" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param('{"kind": "Pod"}', "top level must be a Kubernetes List", id="not-a-list"),
        pytest.param('{"kind": "List", "items": [{"metadata": {}}]}', "has no 'kind'", id="no-kind"),
        pytest.param("{", "not valid JSON or YAML", id="broken-json"),
        pytest.param("kind: List\nitems: [\n  - a: b\n", "not valid JSON or YAML", id="broken-yaml-multiline"),
    ],
)
def test_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert main(["snapshot", "inspect", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: snapshot")
    assert message in captured.err
    assert captured.err.count("\n") == 1
    assert "Traceback" not in captured.err


def test_bad_levels_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snap.json"
    dump_snapshot(_items(), path)
    levels = tmp_path / "levels.yaml"
    levels.write_text("- {domain: rack}\n")
    assert main(["snapshot", "inspect", str(path), "--levels", str(levels)]) == 2
    assert "entry [0].key" in capsys.readouterr().err
