"""``grove-extender plan``: priority then arrival order, reservations carried from gang to gang, the preemption a gang
that does not fit would make, JSON shape, bad input."""

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
    assert set(gangs[0]) == {
        "namespace",
        "name",
        "priority",
        "status",
        "placement",
        "placementScore",
        "reason",
        "solveSeconds",
        "preemption",
    }
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


def _class(name: str, value: int, *, policy: str = "PreemptLowerPriority") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": policy,
    }


def _classed(name: str, klass: str, *, workers: int, created: str, on: list[str] | None = None) -> list[dict[str, Any]]:
    """A gang of 8-GPU pods required in one clique, of PriorityClass ``klass``; bound to ``on`` if given."""
    builders = [make_pod(f"{name}-{i}").gpus(8).gang(name) for i in range(workers)]
    pods = [(b.on(on[i]) if on else b).dict() for i, b in enumerate(builders)]
    gang = make_podgang(name).group("w", pods=[p["metadata"]["name"] for p in pods]).pack(required=CLIQUE)
    return [*pods, gang.priority_class(klass).created(created).dict()]


def _preemption_snapshot(tmp_path: Path) -> str:
    # Cliques c0 = {n00, n01}, c1 = {n10, n11} of 8-GPU nodes. Running at priority 100 ("low"): L1 (2 pods) fills
    # c0, L2 (1 pod) holds n10; n11 is free. Pending: WAIT (low, earliest), HI and HI2 (priority 1000, each 2 pods
    # required in one clique), NEVER (1000, preemptionPolicy Never, 1 pod).
    items = [
        _class("low", 100),
        _class("high", 1000),
        _class("high-never", 1000, policy="Never"),
        *_cluster(),
        *_classed("l1", "low", workers=2, created="2026-01-01T00:00:00Z", on=["n00", "n01"]),
        *_classed("l2", "low", workers=1, created="2026-01-01T00:00:00Z", on=["n10"]),
        *_classed("wait", "low", workers=1, created="2026-01-01T00:00:30Z"),
        *_classed("hi", "high", workers=2, created="2026-01-01T00:01:00Z"),
        *_classed("hi2", "high", workers=2, created="2026-01-01T00:02:00Z"),
        *_classed("never", "high-never", workers=1, created="2026-01-01T00:03:00Z"),
    ]
    return _write(tmp_path, items)


def test_a_gang_that_does_not_fit_shows_the_preemption_the_extender_would_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gangs = _plan(capsys, "--snapshot", _preemption_snapshot(tmp_path))["gangs"]
    # Highest priority first, then arrival: WAIT arrived first but is planned last.
    assert [(g["name"], g["priority"]) for g in gangs] == [("hi", 1000), ("hi2", 1000), ("never", 1000), ("wait", 100)]
    hi, hi2, never, wait = gangs
    # HI: evicting L2 (8 GPUs) frees clique c1, cheaper than L1 (16 GPUs); HI takes n10 and n11.
    assert hi["status"] == "Placed" and sorted(hi["placement"].values()) == ["n10", "n11"]
    assert hi["preemption"] == {
        "status": "Placed",
        "evicted": ["default/l2-0"],
        "gangs": ["default/l2"],
        "gpus": 8,
        "pods": 1,
        "highestPriority": 100,
        "reason": "",
        "solveSeconds": hi["preemption"]["solveSeconds"],
    }
    # HI2: L2 is gone and HI holds c1, so only L1 can make way: both its pods.
    assert hi2["status"] == "Placed" and sorted(hi2["placement"].values()) == ["n00", "n01"]
    assert (hi2["preemption"]["evicted"], hi2["preemption"]["gpus"]) == (["default/l1-0", "default/l1-1"], 16)
    # NEVER may not preempt: no preemption is planned. WAIT has nothing below it to evict.
    assert never["status"] == "Infeasible" and never["preemption"] is None
    assert wait["status"] == "Infeasible" and wait["preemption"]["status"] == "Infeasible"
    assert wait["preemption"]["evicted"] == [] and "no victims" in wait["preemption"]["reason"]


def test_preemption_in_the_table_and_switched_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _preemption_snapshot(tmp_path)
    assert main(["plan", "--snapshot", path]) == 0
    text = capsys.readouterr().out
    assert "preempts: evicts 1 pod(s) of 1 gang(s) (8 GPUs, highest priority 100): default/l2" in text
    assert "evicts default/l1-1" in text and "2 of 4 pending gangs placed, 2 by preempting" in text
    gangs = _plan(capsys, "--snapshot", path, "--no-preemption")["gangs"]
    # Nothing is evicted: HI and HI2 wait, and NEVER takes the one free node, n11.
    assert [(g["name"], g["status"]) for g in gangs] == [
        ("hi", "Infeasible"),
        ("hi2", "Infeasible"),
        ("never", "Placed"),
        ("wait", "Infeasible"),
    ]
    assert all(g["preemption"] is None for g in gangs)


def test_a_gang_with_members_bound_already_gets_no_preemption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # HALF (priority 1000) has one member bound on n10 and one waiting; the other clique is full of low work, n11 is
    # taken by a low pod too. The extender repairs HALF around its bound member rather than evicting for it.
    items = [
        _class("low", 100),
        _class("high", 1000),
        *_cluster(),
        *_classed("l1", "low", workers=2, created="2026-01-01T00:00:00Z", on=["n00", "n01"]),
        *_classed("l2", "low", workers=1, created="2026-01-01T00:00:00Z", on=["n11"]),
    ]
    half = [make_pod("half-0").gpus(8).gang("half").on("n10").dict(), make_pod("half-1").gpus(8).gang("half").dict()]
    podgang = make_podgang("half").group("w", pods=["half-0", "half-1"]).pack(required=CLIQUE).priority_class("high")
    items += [*half, podgang.created("2026-01-01T00:01:00Z").dict()]
    (entry,) = _plan(capsys, "--snapshot", _write(tmp_path, items))["gangs"]
    assert (entry["name"], entry["status"], entry["preemption"]) == ("half", "Infeasible", None)
