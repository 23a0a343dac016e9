"""A fill run's figures: the JSON keys per policy (means over seeds) and a Markdown table (the plot is in
``benchmarks.packing.plot``: matplotlib is the optional 'bench' extra)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.packing.fill import FillRun
from benchmarks.replay.report import cell

__all__ = ["fill_table", "summarise_fill"]


def summarise_fill(runs: Sequence[FillRun]) -> dict[str, Any]:
    """One policy's runs. ``fillAllocatedGpuShare``, ``fillUnallocatedGpus``, ``fillGangsPlaced``: means over
    seeds at the first failure; ``fillGangsAgainstRequired``: of the gangs placed, those placed against a required
    pack; ``fillFgdFragmentedGpus``: FGD's measure there; ``fillFragmentedGpus``: ours."""
    ms = sorted(s * 1000 for run in runs for s in run.decision_seconds)
    return {
        "fillAllocatedGpuShare": round(statistics.fmean(r.allocated_share for r in runs), 4),
        "fillUnallocatedGpus": round(statistics.fmean(r.unallocated_gpus for r in runs), 2),
        "fillGangsPlaced": round(statistics.fmean(r.placed for r in runs), 2),
        "fillGangsAgainstRequired": round(statistics.fmean(r.against_required for r in runs), 2),
        "fillFgdFragmentedGpus": round(statistics.fmean(r.fgd_fragmented_gpus for r in runs), 2),
        "fillFragmentedGpus": round(statistics.fmean(r.fragmented_gpus for r in runs), 2),
        "decisionMedianMs": round(statistics.median(ms), 3) if ms else 0.0,
        "decisionP99Ms": round(ms[min(len(ms) - 1, int(0.99 * len(ms)))], 3) if ms else 0.0,
        "seeds": [
            {
                "seed": r.seed,
                "gangsPlaced": r.placed,
                "gangsAgainstRequired": r.against_required,
                "allocatedGpuShare": round(r.allocated_share, 4),
                "unallocatedGpus": r.unallocated_gpus,
                "fgdFragmentedGpus": round(r.fgd_fragmented_gpus, 2),
                "fragmentedGpus": r.fragmented_gpus,
                "firstFailure": r.first_failure,
                "curve": [[placed, round(share, 4)] for placed, share in r.curve],
            }
            for r in runs
        ],
    }


COLUMNS = (
    ("fillGangsPlaced", "gangs placed"),
    ("fillGangsAgainstRequired", "of them against a required pack"),
    ("fillAllocatedGpuShare", "GPUs allocated"),
    ("fillUnallocatedGpus", "GPUs unallocated"),
    ("fillFgdFragmentedGpus", "FGD fragmented GPUs"),
    ("fillFragmentedGpus", "our fragmented GPUs"),
    ("decisionP99Ms", "decide p99 ms"),
)


def fill_table(snapshot: str, policies: Mapping[str, Mapping[str, Any]], *, seeds: int, shapes: str) -> str:
    header = "| policy | " + " | ".join(title for _, title in COLUMNS) + " | unallocated vs topology-greedy |"
    rule = "|---|" + "---:|" * (len(COLUMNS) + 1)
    base = policies.get("topology-greedy", {}).get("fillUnallocatedGpus")
    rows = []
    for name, m in policies.items():
        ratio = f"{m['fillUnallocatedGpus'] / base:.2f}×" if base else "–"
        cells = " | ".join(cell(m.get(key)) for key, _ in COLUMNS)
        rows.append(f"| {name} | {cells} | {ratio} |")
    title = f"### fill: {snapshot} (gangs drawn from {shapes}, {seeds} seeds, means at the first failure)"
    return "\n".join([title, "", header, rule, *rows, ""])
