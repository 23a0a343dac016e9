"""``grove-extender serve``: argument handling and the wiring it serves (without binding a port)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from scheduler.cli import build_parser, main
from scheduler.cli.serve import build_service, our_pods
from scheduler.extender.cluster_writer import InMemoryClusterWriter
from scheduler.extender.coordinator import CoordinatorConfig
from scheduler.extender.leadership import AlwaysLeader
from scheduler.extender.state import ClusterStore, load_snapshot_into
from scheduler.snapshot import load_snapshot

REPO = Path(__file__).resolve().parents[2]


def test_serve_is_registered_with_its_options() -> None:
    args = build_parser().parse_args(["serve", "--snapshot", "x.json", "--port", "9999", "--bind-wait", "3"])
    assert (args.snapshot, args.port, args.bind_wait) == ("x.json", 9999, 3.0)


@pytest.mark.parametrize(
    ("flags", "names"),
    [
        pytest.param([], {"grove"}, id="default"),
        pytest.param(["--scheduler-name", "a", "--scheduler-name", "b"], {"a", "b"}, id="repeated"),
    ],
)
def test_scheduler_names_decide_which_pods_are_kept_whole(flags: list[str], names: set[str]) -> None:
    args = build_parser().parse_args(["serve", "--snapshot", "x.json", *flags])
    assert our_pods(args).scheduler_names == names


def test_batch_size_defaults_to_16_and_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert build_parser().parse_args(["serve", "--snapshot", "x.json"]).batch_size == CoordinatorConfig.batch_size == 16
    assert main(["serve", "--snapshot", "x.json", "--batch-size", "0"]) == 2
    assert "--batch-size must be at least 1" in capsys.readouterr().err


def test_a_queue_heads_model_gets_the_solve_limit_unless_told_and_never_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = build_parser()
    assert parser.parse_args(["serve", "--snapshot", "x.json"]).head_time_limit is None  # --solve-time-limit's
    assert parser.parse_args(["serve", "--snapshot", "x.json", "--head-time-limit", "1"]).head_time_limit == 1.0
    assert main(["serve", "--snapshot", "x.json", "--head-time-limit", "0"]) == 2
    assert "--head-time-limit must be positive" in capsys.readouterr().err


def test_serve_refuses_a_missing_or_broken_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve"]) == 2
    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "Pod"}')
    assert main(["serve", "--snapshot", str(broken)]) == 2
    assert "kind: List" in capsys.readouterr().err


def test_the_demo_request_is_answered_from_a_plan_made_ahead() -> None:
    store = ClusterStore()
    service = build_service(
        store=store, writer=InMemoryClusterWriter(store), leadership=AlwaysLeader(), config=CoordinatorConfig()
    )
    load_snapshot_into(store, load_snapshot(REPO / "benchmarks" / "snapshots" / "demo.json"))
    assert service.worker.run_once() > 0  # the first list queued every pending gang
    states = {gang["gang"]: gang["state"] for gang in service.coordinator.debug_gangs()}
    assert states["default/pretrain-gb200-0"] == "Bound"  # found bound: a fact, not re-planned
    sample = (REPO / "deploy" / "requests" / "filter-demo.json").read_bytes()

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=service.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://extender") as client:
            return await client.post("/filter", content=sample)

    reply = asyncio.run(post()).json()
    assert len(reply["NodeNames"]) == 1 and reply["Error"] == ""
