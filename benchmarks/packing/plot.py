"""The fill as a PNG: allocation share against gangs placed, one panel per snapshot. Kept apart from the figures:
matplotlib is the optional 'bench' extra, imported only when a plot is asked for. A bare ``Figure`` renders with
the Agg canvas: no pyplot global state, no display."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

__all__ = ["write_fill_plot"]


def write_fill_plot(fills: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """``fills``: the per-snapshot JSON objects (``{"snapshot", "policies"}``). One panel per snapshot: allocation
    share against gangs placed — one thin line per seed and policy (every policy draws the same gangs, so until a
    first failure the lines lie on each other), a dot where each run failed first, and per policy a thick line
    through the mean share of the runs still placing."""
    figure = Figure(figsize=(6 * max(1, len(fills)), 4.5))
    axes = figure.subplots(1, max(1, len(fills)), squeeze=False)[0]
    for axis, run in zip(axes, fills, strict=False):
        for index, (name, metrics) in enumerate(run["policies"].items()):
            color = f"C{index}"
            curves = [entry["curve"] for entry in metrics["seeds"]]
            for curve in curves:
                axis.plot([p[0] for p in curve], [p[1] for p in curve], color=color, alpha=0.2, linewidth=0.6)
                axis.plot([curve[-1][0]], [curve[-1][1]], "o", color=color, markersize=3)
            longest = max((len(curve) for curve in curves), default=0)
            mean = [statistics.fmean(c[k][1] for c in curves if len(c) > k) for k in range(longest)]
            axis.plot(range(longest), mean, color=color, linewidth=2, label=f"{name} (mean of runs still placing)")
        axis.set_title(Path(str(run["snapshot"])).name)
        axis.set_xlabel("gangs placed")
        axis.set_ylabel("share of GPUs allocated")
        axis.set_ylim(0, 1.02)
        axis.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
