"""The comparison as a PNG: utilisation over time per policy (top), GPU-hours delivered, run against a
``required`` constraint and stranded (bottom),
one column per snapshot. A bare ``Figure`` renders with the Agg canvas: no pyplot global state, no display."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure


def write_plot(runs: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """``runs`` are the bench's per-snapshot JSON objects (``{"snapshot", "policies"}``)."""
    columns = max(1, len(runs))
    figure = Figure(figsize=(6 * columns, 8))
    axes = figure.subplots(2, columns, squeeze=False)
    for column, run in enumerate(runs):
        policies: Mapping[str, Mapping[str, Any]] = run["policies"]
        top, bottom = axes[0][column], axes[1][column]
        for name, metrics in policies.items():
            points = metrics["utilisationOverTime"]
            top.step([p[0] / 3600 for p in points], [p[1] for p in points], where="post", label=name, linewidth=1)
        top.set_title(Path(str(run["snapshot"])).name)
        top.set_xlabel("hours")
        top.set_ylabel("share of GPUs running gangs (any placement)")
        top.set_ylim(0, 1.02)
        top.legend(fontsize="small")
        names = list(policies)
        bars = (
            ("gpuHoursDelivered", "delivered"),
            ("gpuHoursViolating", "against required"),
            ("gpuHoursStranded", "stranded"),
        )
        for offset, (key, label) in enumerate(bars):
            heights = [policies[n].get(key, 0.0) for n in names]
            bottom.bar(
                [i + (offset - 1) * 0.27 for i in range(len(names))], heights, width=0.27, label=f"GPU-h {label}"
            )
        positions = range(len(names))
        bottom.set_xticks(list(positions), names, rotation=20)
        bottom.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
