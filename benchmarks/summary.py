"""``python -m benchmarks.summary [--fill] RESULT.json ...``: the issue targets per bench result, as a Markdown table.

For each snapshot and each of our policies in it (``cpsat``, ``cpsat-batch``): GPU-hours delivered against the
best baseline's (the ratio; the best baseline is the one of the others that delivered most), mean wait against
that baseline's, GPU-hours stranded, and the share of gangs kept inside one NVLink domain among those that could
have been. With ``--fill``, per fill result: cpsat's unallocated GPUs at the first failure against
topology-greedy's, and both policies' fragmentation, FGD's measure and ours.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

OURS = ("cpsat", "cpsat-batch")


def _rows(document: Any) -> list[dict[str, Any]]:
    return document if isinstance(document, list) else [document]


def summary(paths: list[str]) -> str:
    lines = [
        "| result | policy | GPU-h | best baseline | its GPU-h | ratio | wait mean s | its wait | wait ratio "
        "| stranded GPU-h | 1-NVLink-domain share |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for path in paths:
        runs = _rows(json.loads(Path(path).read_text()))
        for run in runs:
            policies = run["policies"]
            baselines = [(n, m) for n, m in policies.items() if n not in OURS]
            name, best = max(baselines, key=lambda item: item[1]["gpuHoursDelivered"])
            label = Path(path).stem if len(runs) == 1 else Path(run["snapshot"]).name
            for ours in (n for n in OURS if n in policies):
                m = policies[ours]
                ratio = _ratio(m["gpuHoursDelivered"], best["gpuHoursDelivered"])
                wait = _ratio(m["waitMeanSeconds"], best["waitMeanSeconds"])
                lines.append(
                    f"| {label} | {ours} | {m['gpuHoursDelivered']:,.1f} | {name} | "
                    f"{best['gpuHoursDelivered']:,.1f} | {ratio:.4f} | {m['waitMeanSeconds']:,.1f} | "
                    f"{best['waitMeanSeconds']:,.1f} | {wait:.3f} | {m['gpuHoursStranded']:g} | "
                    f"{m['oneNvlinkDomainShare']} ({m['gangsFittingOneNvlinkDomain']} gangs) |"
                )
    return "\n".join(lines) + "\n"


def fill_summary(paths: list[str]) -> str:
    lines = [
        "| cluster (gangs drawn from) | cpsat GPUs unallocated | topology-greedy | ratio | cpsat gangs placed "
        "| topology-greedy | FGD fragmented GPUs, cpsat / greedy | ours, cpsat / greedy |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for path in paths:
        for run in _rows(json.loads(Path(path).read_text())):
            cpsat, greedy = run["policies"]["cpsat"], run["policies"]["topology-greedy"]
            label = f"{Path(run['snapshot']).name} ({Path(run['shapes']).name})"
            lines.append(
                f"| {label} | {cpsat['fillUnallocatedGpus']:g} | {greedy['fillUnallocatedGpus']:g} | "
                f"{_ratio(cpsat['fillUnallocatedGpus'], greedy['fillUnallocatedGpus']):.2f} | "
                f"{cpsat['fillGangsPlaced']:g} | {greedy['fillGangsPlaced']:g} | "
                f"{cpsat['fillFgdFragmentedGpus']:g} / {greedy['fillFgdFragmentedGpus']:g} | "
                f"{cpsat['fillFragmentedGpus']:g} / {greedy['fillFragmentedGpus']:g} |"
            )
    return "\n".join(lines) + "\n"


def _ratio(ours: float, theirs: float) -> float:
    return ours / theirs if theirs else float("inf")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.summary", description="the issue targets per result")
    parser.add_argument("--fill", action="store_true", help="the results are bench --fill results")
    parser.add_argument("results", nargs="+", metavar="RESULT.json")
    args = parser.parse_args()
    sys.stdout.write(fill_summary(args.results) if args.fill else summary(args.results))
