"""``grove-extender plan``: arrival order, reservations carried from gang to gang, JSON shape, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scheduler.cli import main
from tests.builders import make_node, make_pod, make_podgang

CLIQUE = "nvidia.com/gpu.clique"


def _write(tmp_path: Path, items: list[dict[str, Any]]) -> str:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def _gang(name: str, *, workers: int, created: str) -> list[dict[str, Any]]:
    pods = [make_pod(f"{name}-{i}").gpus(8).gang(name).dict() for i in range(workers)]
    gang = make_podgang(name).group("w", pods=[p["metadata"]["name"] for p in pods]).pack(required=CLIQUE)
    return [*pods, gang.created(created).dict()]


def _cluster() -> list[dict[str, Any]]:
    # Two cliques of two 8-GPU nodes: each 2-pod gang of 8-GPU pods fills exactly one clique.
    return [make_node(f"n{c}{h}").gpus(8).label(CLIQUE, f"c{c}").dict() for c in range(2) for h in range(2)]


def _plan(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["plan", *args, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_gangs_are_planned_in_arrival_order_each_reserving_for_the_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Three gangs, each needing a whole clique; only two cliques: the last to arrive is refused.
    items = [
        *_cluster(),
        *_gang("late", workers=2, created="2026-01-01T00:03:00Z"),
        *_gang("first", workers=2, created="2026-01-01T00:01:00Z"),
        *_gang("second", workers=2, created="2026-01-01T00:02:00Z"),
    ]
    out = _plan(capsys, "--snapshot", _write(tmp_path, items))
    gangs = out["gangs"]
    assert [g["name"] for g in gangs] == ["first", "second", "late"]
    assert [g["status"] for g in gangs] == ["Placed", "Placed", "Infeasible"]
    first, second = ({n[:2] for n in g["placement"].values()} for g in gangs[:2])
    assert len(first) == 1 and len(second) == 1 and first != second  # one whole clique each, never shared
    assert set(gangs[0]) == {"namespace", "name", "status", "placement", "placementScore", "reason", "solveSeconds"}
    assert gangs[0]["placementScore"] == 1.0 and gangs[2]["placement"] == {}
    assert CLIQUE in gangs[2]["reason"]


def test_bound_members_count_and_a_broken_gang_is_reported_not_fatal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bound = make_pod("half-0").gpus(8).gang("half").on("n00").dict()
    waiting = make_pod("half-1").gpus(8).gang("half").dict()
    half = make_podgang("half").group("w", pods=["half-0", "half-1"]).created("2026-01-01T00:00:00Z").dict()
    broken = make_podgang("broken").group("w", pods=["ghost"]).created("2026-01-01T00:01:00Z").dict()
    out = _plan(capsys, "--snapshot", _write(tmp_path, [*_cluster(), bound, waiting, half, broken]))
    by_name = {g["name"]: g for g in out["gangs"]}
    assert by_name["half"]["status"] == "Placed"
    assert list(by_name["half"]["placement"]) == ["default/half-1"]  # only the unbound member is planned
    assert by_name["half"]["placement"]["default/half-1"] != "n00"  # n00 is full
    assert by_name["broken"]["status"] == "Invalid" and "ghost" in by_name["broken"]["reason"]


def test_human_output_and_baseline_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = [*_cluster(), *_gang("g", workers=2, created="2026-01-01T00:00:00Z")]
    assert main(["plan", "--snapshot", _write(tmp_path, items), "--policy", "first-fit"]) == 0
    text = capsys.readouterr().out
    assert "default/g" in text and "Placed" in text and "default/g-0 → n00" in text


def test_bad_snapshot_is_one_line_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    assert main(["plan", "--snapshot", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
