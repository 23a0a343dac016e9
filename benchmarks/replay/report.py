"""A bench run as a Markdown table: one row per policy, the columns a reader compares first."""

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


def cell(value: Any) -> str:
    """A table cell: small numbers to 3 significant digits, larger ones with thousands separators."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:,.1f}"
    return str(value)


def markdown_table(snapshot: str, policies: Mapping[str, Mapping[str, Any]]) -> str:
    header = "| policy | " + " | ".join(title for _, title in COLUMNS) + " |"
    rule = "|---|" + "---:|" * len(COLUMNS)
    rows = [f"| {name} | " + " | ".join(cell(m.get(key)) for key, _ in COLUMNS) + " |" for name, m in policies.items()]
    first = next(iter(policies.values()), {})
    window = first.get("horizonSeconds", 0) / 3600
    facts = f"{first.get('capacityGpus', 0)} GPUs, {first.get('gangsArrived', 0)} gangs, window {window:.2f} h"
    return "\n".join([f"### {snapshot} ({facts})", "", header, rule, *rows, ""])
