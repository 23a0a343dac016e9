"""A replay of gangs of different priorities as a PNG, one column per snapshot: how long the high-priority gangs
waited (top), the GPUs each victim chooser evicted on the same decisions (middle: one point per decision, cpsat
against kai-greedy; below the diagonal cpsat evicted fewer), and what the GPUs did (bottom: GPU-hours delivered, the
part of them lost to evictions, GPUs evicted per high-priority gang). A bare ``Figure``, as ``plot`` draws."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

__all__ = ["has_priorities", "write_preemption_plot"]


def has_priorities(runs: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any replay had gangs of more than one priority (then this is the plot to draw)."""
    return any(metrics.get("highPriorityGangs") for run in runs for metrics in run["policies"].values())


def write_preemption_plot(runs: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """``runs`` are the bench's per-snapshot JSON objects (``{"snapshot", "policies"}``)."""
    columns = max(1, len(runs))
    figure = Figure(figsize=(9 * columns, 13))
    axes = figure.subplots(3, columns, squeeze=False)
    for column, run in enumerate(runs):
        policies: Mapping[str, Mapping[str, Any]] = run["policies"]
        _waits(axes[0][column], policies, title=Path(str(run["snapshot"])).name)
        _choices(axes[1][column], policies)
        _gpu_hours(axes[2][column], policies)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def _waits(ax: Any, policies: Mapping[str, Mapping[str, Any]], *, title: str) -> None:
    names = list(policies)
    for offset, (key, label) in enumerate(
        (("highPriorityWaitMeanSeconds", "mean"), ("highPriorityWaitP95Seconds", "p95"))
    ):
        # A log axis shows seconds and hours together; a wait of 0 s is drawn at 1 s and labelled 0.
        values = [policies[n].get(key) or 0.0 for n in names]
        bars = ax.bar([i + (offset - 0.5) * 0.4 for i in range(len(names))], [max(v, 1.0) for v in values], 0.4)
        ax.bar_label(bars, labels=[f"{v:,.0f} s" for v in values], fontsize="small")
        bars.set_label(label)
    ax.set_yscale("log")
    ax.set_ylim(top=ax.get_ylim()[1] * 3)
    ax.set_xticks(range(len(names)), names, rotation=10, fontsize="small")
    ax.set_ylabel("wait of high-priority gangs, s (log)")
    ax.set_title(f"{title}: high-priority gangs' wait")
    ax.legend(fontsize="small")


def _choices(ax: Any, policies: Mapping[str, Mapping[str, Any]]) -> None:
    top = 1
    compared = [(n, m) for n, m in policies.items() if m.get("preemptionComparison")]
    for index, (name, metrics) in enumerate(compared):
        decisions = [
            d
            for d in metrics["preemptionComparison"]["decisions"]
            if d["cpsat"]["status"] == "Placed" and d["kai-greedy"]["status"] == "Placed"
        ]
        greedy = [d["kai-greedy"]["gpusEvicted"] for d in decisions]
        cpsat = [d["cpsat"]["gpusEvicted"] for d in decisions]
        summary = metrics["preemptionComparison"]["summary"]
        label = (
            f"{name}: {len(decisions)} decisions, cpsat fewer {summary['cpsatFewer']}, equal {summary['equal']}, "
            f"more {summary['cpsatMore']}"
        )
        ax.scatter(greedy, cpsat, marker="os^v"[index % 4], alpha=0.6, label=label)
        top = max(top, *greedy, *cpsat)
    ax.plot([0, top], [0, top], color="grey", linewidth=0.8, linestyle="--", label="as many GPUs")
    ax.set_xlabel("GPUs kai-greedy would evict (KAI-like: lowest priority, smallest gang first, no pruning)")
    ax.set_ylabel("GPUs cpsat evicts (victim model)")
    ax.set_title("GPUs evicted per decision, both choosers on the same state")
    ax.legend(fontsize="small")


def _gpu_hours(ax: Any, policies: Mapping[str, Mapping[str, Any]]) -> None:
    names = list(policies)
    delivered = [policies[n].get("gpuHoursDelivered", 0.0) for n in names]
    lost = [policies[n].get("gpuHoursLost", 0.0) or 0.0 for n in names]
    kept = [d - x for d, x in zip(delivered, lost, strict=True)]
    positions = range(len(names))
    ax.bar(positions, kept, 0.5, label="GPU-h delivered and kept")
    ax.bar(positions, lost, 0.5, bottom=kept, label="GPU-h delivered, then lost to evictions")
    per_gang = [policies[n].get("gpusEvictedPerHighPriorityGang") for n in names]
    for i, (height, value, gone) in enumerate(zip(delivered, per_gang, lost, strict=True)):
        text = f"{height:,.0f} GPU-h, {gone:,.0f} lost\n{value or 0:.1f} GPUs evicted\nper high-priority gang"
        ax.annotate(text, (i, height), ha="center", va="bottom", fontsize="small")
    ax.set_ylim(0, max(delivered, default=1.0) * 1.35)
    ax.set_xticks(list(positions), names, rotation=10, fontsize="small")
    ax.set_ylabel("GPU-hours")
    ax.set_title("What the GPUs did")
    ax.legend(fontsize="small", loc="lower right")
