"""``python -m benchmarks.summary RESULT.json ...``: the issue-6 targets per bench result, as a Markdown table.

For each snapshot: cpsat's GPU-hours delivered against the best baseline's (the ratio), GPU-hours cpsat stranded,
and cpsat's share of gangs kept inside one NVLink domain among those that could have been.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _rows(document: Any) -> list[dict[str, Any]]:
    return document if isinstance(document, list) else [document]


def summary(paths: list[str]) -> str:
    lines = [
        "| result | cpsat GPU-h | best baseline | its GPU-h | ratio | stranded GPU-h | 1-NVLink-domain share |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for path in paths:
        runs = _rows(json.loads(Path(path).read_text()))
        for run in runs:
            policies = run["policies"]
            cpsat = policies["cpsat"]
            name, best = max(
                ((n, m) for n, m in policies.items() if n != "cpsat"), key=lambda item: item[1]["gpuHoursDelivered"]
            )
            label = Path(path).stem if len(runs) == 1 else Path(run["snapshot"]).name
            ratio = (
                cpsat["gpuHoursDelivered"] / best["gpuHoursDelivered"] if best["gpuHoursDelivered"] else float("inf")
            )
            lines.append(
                f"| {label} | {cpsat['gpuHoursDelivered']:,.1f} | {name} | "
                f"{best['gpuHoursDelivered']:,.1f} | {ratio:.4f} | {cpsat['gpuHoursStranded']:g} | "
                f"{cpsat['oneNvlinkDomainShare']} ({cpsat['gangsFittingOneNvlinkDomain']} gangs) |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(summary(sys.argv[1:]))
