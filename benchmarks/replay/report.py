"""A bench run as a Markdown table: one row per policy, the columns a reader compares first; when the snapshot's
gangs have different priorities, a second table of priorities and preemption, and the victim choosers compared."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

COLUMNS: tuple[tuple[str, str], ...] = (
    ("gangsCompleted", "gangs done"),
    ("gpuHoursDelivered", "GPU-h delivered"),
    ("gpuHoursViolating", "GPU-h against required"),
    ("gpuHoursHeld", "GPU-h held"),
    ("gpuHoursStranded", "GPU-h stranded"),
    ("utilisation", "util"),
    ("waitMeanSeconds", "wait mean s"),
    ("waitP95Seconds", "wait p95 s"),
    ("fragmentedGpus", "frag GPUs"),
    ("oneNvlinkDomainShare", "1 NVL domain"),
    ("meanDomainsSpanned", "domains"),
    ("placementScoreMean", "score"),
    ("decisionMedianMs", "decide p50 ms"),
    ("decisionP99Ms", "decide p99 ms"),
)


PRIORITY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("preemption", "preemption"),
    ("highPriorityGangs", "high-priority gangs"),
    ("highPriorityWaitMeanSeconds", "their wait mean s"),
    ("highPriorityWaitP95Seconds", "their wait p95 s"),
    ("preemptions", "preemptions"),
    ("gpusEvicted", "GPUs evicted"),
    ("gpusEvictedPerHighPriorityGang", "GPUs evicted / high gang"),
    ("gangsEvictedWhole", "gangs evicted whole"),
    ("gpuHoursLost", "GPU-h lost"),
    ("gangsBroken", "gangs broken"),
    ("preemptorsNotStarted", "preemptors not started"),
    ("replaySeconds", "replay s"),
)


def cell(value: Any) -> str:
    """A table cell: small numbers to 3 significant digits, larger ones with thousands separators."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:,.1f}"
    return str(value)


def _table(columns: tuple[tuple[str, str], ...], policies: Mapping[str, Mapping[str, Any]]) -> list[str]:
    header = "| policy | " + " | ".join(title for _, title in columns) + " |"
    rule = "|---|" + "---:|" * len(columns)
    rows = [f"| {name} | " + " | ".join(cell(m.get(key)) for key, _ in columns) + " |" for name, m in policies.items()]
    return [header, rule, *rows]


def _comparison(name: str, metrics: Mapping[str, Any]) -> str | None:
    found = metrics.get("preemptionComparison")
    if not found:
        return None
    s = found["summary"]
    return (
        f"- {name}: {s['decisions']} decisions, {s['bothPlaced']} placed by both choosers; cpsat evicted fewer GPUs "
        f"than kai-greedy in {s['cpsatFewer']}, as many in {s['equal']}, more in {s['cpsatMore']} "
        f"({s['cpsatGpusEvicted']:,} GPUs against {s['kaiGreedyGpusEvicted']:,} over those decisions); placed by "
        f"one only: cpsat {s['onlyCpsatPlaced']}, kai-greedy {s['onlyKaiGreedyPlaced']}; choice p99 "
        f"{s['cpsatDecisionP99Ms']:,.1f} ms and {s['kaiGreedyDecisionP99Ms']:,.1f} ms"
    )


def markdown_table(snapshot: str, policies: Mapping[str, Mapping[str, Any]]) -> str:
    first = next(iter(policies.values()), {})
    window = first.get("horizonSeconds", 0) / 3600
    facts = f"{first.get('capacityGpus', 0)} GPUs, {first.get('gangsArrived', 0)} gangs, window {window:.2f} h"
    lines = [f"### {snapshot} ({facts})", "", *_table(COLUMNS, policies), ""]
    if any(m.get("highPriorityGangs") for m in policies.values()):
        lines += ["Priorities and preemption:", "", *_table(PRIORITY_COLUMNS, policies), ""]
        compared = [line for name, m in policies.items() if (line := _comparison(name, m))]
        if compared:
            lines += ["Victim choosers on the same decisions (each run asks both, applies its own):", "", *compared, ""]
    return "\n".join(lines)
