"""``benchmarks.summary``: cpsat against the best baseline, by GPU-hours delivered."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.summary import summary


def _metrics(gpu_hours: float) -> dict[str, object]:
    return {
        "gpuHoursDelivered": gpu_hours,
        "gpuHoursStranded": 0.0,
        "oneNvlinkDomainShare": 0.96,
        "gangsFittingOneNvlinkDomain": 25,
    }


def test_ratio_is_against_the_best_baseline(tmp_path: Path) -> None:
    path = tmp_path / "gb200.json"
    policies = {"cpsat": _metrics(110.0), "first-fit": _metrics(50.0), "topology-greedy": _metrics(100.0)}
    path.write_text(json.dumps({"snapshot": "x/gb200.json.gz", "policies": policies}))
    row = summary([str(path)]).splitlines()[-1]
    # Best baseline is topology-greedy (100 > 50): 110 / 100 = 1.1.
    assert row == "| gb200 | 110.0 | topology-greedy | 100.0 | 1.1000 | 0 | 0.96 (25 gangs) |"
