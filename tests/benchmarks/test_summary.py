"""``benchmarks.summary``: cpsat against the best baseline, by GPU-hours delivered."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.summary import fill_summary, summary


def _metrics(gpu_hours: float, wait: float = 100.0) -> dict[str, object]:
    return {
        "gpuHoursDelivered": gpu_hours,
        "waitMeanSeconds": wait,
        "gpuHoursStranded": 0.0,
        "oneNvlinkDomainShare": 0.96,
        "gangsFittingOneNvlinkDomain": 25,
    }


def test_ratio_is_against_the_best_baseline(tmp_path: Path) -> None:
    path = tmp_path / "gb200.json"
    policies = {
        "cpsat": _metrics(110.0, wait=90.0),
        "cpsat-batch": _metrics(120.0, wait=80.0),
        "first-fit": _metrics(50.0),
        "topology-greedy": _metrics(100.0),
    }
    path.write_text(json.dumps({"snapshot": "x/gb200.json.gz", "policies": policies}))
    cpsat, batch = summary([str(path)]).splitlines()[-2:]
    # Best baseline is topology-greedy (100 > 50; cpsat-batch is ours, not a baseline): 110 / 100 = 1.1, wait
    # 90 / 100 = 0.9; the batch: 120 / 100 = 1.2, 80 / 100 = 0.8.
    assert cpsat == (
        "| gb200 | cpsat | 110.0 | topology-greedy | 100.0 | 1.1000 | 90.0 | 100.0 | 0.900 | 0 | 0.96 (25 gangs) |"
    )
    assert batch.startswith("| gb200 | cpsat-batch | 120.0 | topology-greedy | 100.0 | 1.2000 | 80.0 | 100.0 | 0.800")


def test_fill_ratio_is_cpsat_over_topology_greedy(tmp_path: Path) -> None:
    def fill(unallocated: float) -> dict[str, float]:
        return {
            "fillUnallocatedGpus": unallocated,
            "fillGangsPlaced": 10.0,
            "fillFgdFragmentedGpus": 1.5,
            "fillFragmentedGpus": 2.0,
        }

    path = tmp_path / "fill.json"
    policies = {"cpsat": fill(30.0), "topology-greedy": fill(50.0)}
    path.write_text(json.dumps({"snapshot": "x/dgx.json.gz", "shapes": "x/dgx.json.gz", "policies": policies}))
    row = fill_summary([str(path)]).splitlines()[-1]
    # 30 / 50 = 0.60
    assert row == "| dgx.json.gz (dgx.json.gz) | 30 | 50 | 0.60 | 10 | 10 | 1.5 / 1.5 | 2 / 2 |"
