"""``grove-extender bench`` end to end on a tiny generated snapshot: table, JSON keys, PNG, and clear refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.generate.scenarios import build
from scheduler.cli import main
from scheduler.snapshot import dump_snapshot
from tests.benchmarks.data import small_h100_snapshot, write_mini_traces
from tests.conftest import REPO_ROOT

ISSUE_KEYS = {
    "gangsCompleted",
    "gpuHoursDelivered",
    "gpuHoursStranded",
    "waitMeanSeconds",
    "waitP95Seconds",
    "utilisation",
    "fragmentedGpus",
    "oneNvlinkDomainShare",
    "meanDomainsSpanned",
    "placementScoreMean",
    "decisionMedianMs",
    "decisionP99Ms",
}


@pytest.fixture(scope="module")
def snapshot_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_h100_snapshot(tmp_path_factory.mktemp("cli"))


def test_bench_writes_table_json_and_plot(
    snapshot_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, png = tmp_path / "out.json", tmp_path / "out.png"
    argv = ["bench", "--snapshot", str(snapshot_path), "--policy", "cpsat,first-fit", "--json", str(out)]
    assert main([*argv, "--plot", str(png)]) == 0
    report = json.loads(out.read_text())
    assert report["snapshot"] == str(snapshot_path)
    assert list(report["policies"]) == ["cpsat", "first-fit"]
    for metrics in report["policies"].values():
        assert set(metrics) >= ISSUE_KEYS
        assert metrics["gangsArrived"] == 10
    table = capsys.readouterr().out
    assert "| cpsat |" in table and "| first-fit |" in table
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_policy_is_refused_with_the_choices(snapshot_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--snapshot", str(snapshot_path), "--policy", "cpsat,magic"]) == 2
    assert "magic" in capsys.readouterr().err


def test_a_gang_without_a_duration_is_refused_naming_the_annotation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = build("dgx-h100", seed=2, data_dir=write_mini_traces(tmp_path / "data"), gangs=2)
    gang = next(item for item in items if item["kind"] == "PodGang")
    del gang["metadata"]["annotations"]["grove-extender/duration-seconds"]
    path = tmp_path / "bad.json"
    dump_snapshot(items, path)
    assert main(["bench", "--snapshot", str(path), "--policy", "first-fit"]) == 2
    err = capsys.readouterr().err
    assert gang["metadata"]["name"] in err and "grove-extender/duration-seconds" in err


def _without_matplotlib(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where importing matplotlib fails, as in the runtime image (no extra)."""
    prelude = "import sys; sys.modules['matplotlib'] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, check=False
    )


def test_the_cli_imports_without_the_bench_extra() -> None:
    done = _without_matplotlib("import scheduler.cli\nassert sys.modules['matplotlib'] is None\nprint('ok')")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_plot_without_the_bench_extra_says_how_to_install_it(snapshot_path: Path, tmp_path: Path) -> None:
    argv = ["bench", "--snapshot", str(snapshot_path), "--policy", "first-fit", "--plot", str(tmp_path / "o.png")]
    done = _without_matplotlib(f"from scheduler.cli import main\nsys.exit(main({argv!r}))")
    assert done.returncode == 2, done.stderr
    assert "pip install 'grove-extender[bench]'" in done.stderr
    assert not (tmp_path / "o.png").exists()


PREEMPTION_KEYS = {
    "highPriorityWaitMeanSeconds",
    "highPriorityWaitP95Seconds",
    "preemptions",
    "gpusEvictedPerHighPriorityGang",
    "gpuHoursLost",
    "gangsBroken",
    "preemptionComparison",
}


@pytest.fixture(scope="module")
def preemption_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-preemption")
    path = root / "gb200-preemption.json.gz"
    dump_snapshot(build("gb200-preemption", seed=2, data_dir=write_mini_traces(root / "data"), gangs=30), path)
    return path


def test_preemption_modes_side_by_side_with_the_comparison(
    preemption_snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, png = tmp_path / "out.json", tmp_path / "out.png"
    argv = ["bench", "--snapshot", str(preemption_snapshot), "--policy", "cpsat", "--workers", "1"]
    assert main([*argv, "--preemption", "off,cpsat,kai-greedy", "--json", str(out), "--plot", str(png)]) == 0
    policies = json.loads(out.read_text())["policies"]
    assert list(policies) == ["cpsat", "cpsat, preemption cpsat", "cpsat, preemption kai-greedy"]
    for metrics in policies.values():
        assert set(metrics) >= ISSUE_KEYS | PREEMPTION_KEYS
        assert metrics["gangsBroken"] == 0 and metrics["highPriorityGangs"] > 0
    off, cpsat, greedy = policies.values()
    assert off["preemptions"] == 0 and off["preemptionComparison"] is None
    for metrics in (cpsat, greedy):
        summary = metrics["preemptionComparison"]["summary"]
        assert metrics["preemptions"] > 0 and summary["cpsatMore"] == 0
        assert summary["bothPlaced"] == summary["cpsatFewer"] + summary["equal"]
    # Preempting, the inference gangs wait less than without.
    assert cpsat["highPriorityWaitMeanSeconds"] < off["highPriorityWaitMeanSeconds"]
    table = capsys.readouterr().out
    assert "Priorities and preemption" in table and "| cpsat, preemption kai-greedy | kai-greedy |" in table
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        pytest.param(["--preemption", "greedy"], "--preemption must name", id="unknown-mode"),
        pytest.param(["--preemption", "cpsat", "--policy", "first-fit"], "cpsat, topology-greedy", id="pod-by-pod"),
        pytest.param(["--preemption", "cpsat", "--policy", "cpsat-batch"], "cpsat, topology-greedy", id="batch"),
        pytest.param(["--preemption", "cpsat", "--fill"], "not with --fill", id="fill"),
    ],
)
def test_preemption_is_refused_where_it_is_not_replayed(
    snapshot_path: Path, extra: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--snapshot", str(snapshot_path), *extra]
    if "--policy" not in extra:
        argv += ["--policy", "cpsat"]
    assert main(argv) == 2
    assert says in capsys.readouterr().err
