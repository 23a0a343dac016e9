"""What happened second by second while a large gang gathered: a sampler thread reads, every ``period`` seconds,
the pods bound so far, the extender's counters (filter answers by the pod's nomination, binds, nominations written,
plans) and the CPU of each process and of the extender's threads; ``rows`` turns the samples into rates per
interval, so a stall (a second in which kube-scheduler offered few pods) shows where it sits.

The sampler reads the extender's ``/metrics`` over loopback and ``/proc``: a few milliseconds per sample, charged to
this process, not to the ones measured.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from benchmarks.e2e.counters import counters
from benchmarks.e2e.processes import by_thread, cpu_seconds, thread_cpu

__all__ = ["COLUMNS", "Sample", "Timeline"]

COLUMNS: tuple[tuple[str, str], ...] = (
    ("filter (nominated)", 'grove_extender_filter_nominations_total{nomination="alone"}'),
    ("filter (scanned)", 'grove_extender_filter_nominations_total{nomination="scanned"}'),
    ("filter (none)", 'grove_extender_filter_nominations_total{nomination="none"}'),
    ("refused", 'grove_extender_filter_answers_total{answer="refused"}'),
    ("bind calls", 'grove_extender_request_seconds_count{verb="bind"}'),
    ("nominations", 'grove_extender_nominations_total{result="written"}'),
    ("plans", "grove_extender_plans_total"),
)
"""(heading, series) of the extender's counters shown per interval; a series without labels sums every label."""


@dataclass
class Sample:
    at: float
    bound: int
    counts: dict[str, float]
    cpu: dict[str, float]
    threads: dict[int, float] = field(default_factory=dict)


class Timeline:
    """Samples until ``stop``; ``rows`` reads them back as per-interval rates."""

    def __init__(
        self,
        *,
        bound: Callable[[], int],
        metrics: Callable[[], str],
        pids: Mapping[str, int],
        extender_pid: int,
        period: float = 2.0,
    ) -> None:
        self._bound, self._metrics, self._pids, self._extender = bound, metrics, dict(pids), extender_pid
        self._period = period
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="timeline", daemon=True)

    def start(self) -> Timeline:
        self._take()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._take()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            self._take()

    def _take(self) -> None:
        try:
            text = self._metrics()
        except (OSError, RuntimeError):
            return  # the extender between restarts: this interval merges into the next
        found = counters(text, keep=lambda name: name.startswith("grove_extender_"))
        counts = {heading: _series(found, series) for heading, series in COLUMNS}
        cpu = {}
        for name, pid in self._pids.items():
            try:
                cpu[name] = cpu_seconds(pid)
            except OSError:
                continue
        try:
            threads = thread_cpu(self._extender)
        except OSError:
            threads = {}
        self.samples.append(Sample(time.monotonic(), self._bound(), counts, cpu, threads))

    def rows(self, *, since: float, every: float, names: Mapping[int, str]) -> list[str]:
        """One line per ``every`` seconds from ``since``: pods bound, each counter's rate, each process's CPU in
        cores and the extender's busiest threads in cores."""
        kept = [s for s in self.samples if s.at >= since - self._period]
        lines = []
        last = kept[0] if kept else None
        for sample in kept[1:]:
            assert last is not None
            if sample.at - last.at < every and sample is not kept[-1]:
                continue
            span = sample.at - last.at
            rates = ", ".join(
                f"{heading} {(sample.counts[heading] - last.counts[heading]) / span:.0f}/s"
                for heading, _ in COLUMNS
                if sample.counts[heading] != last.counts[heading]
            )
            cores = ", ".join(
                f"{name} {(sample.cpu[name] - last.cpu.get(name, 0.0)) / span:.2f}" for name in sorted(sample.cpu)
            )
            threads = by_thread(last.threads, sample.threads, names)
            busiest = ", ".join(
                f"{name} {seconds / span:.2f}"
                for name, seconds in sorted(threads.items(), key=lambda kv: -kv[1])[:3]
                if seconds / span >= 0.05
            )
            lines.append(
                f"{last.at - since:6.1f}–{sample.at - since:5.1f} s: bound {sample.bound:5d}; {rates or 'no calls'}; "
                f"cores: {cores}; extender threads: {busiest or '-'}"
            )
            last = sample
        return lines


def _series(found: Mapping[str, float], series: str) -> float:
    if "{" in series:
        return found.get(series, 0.0)
    return sum(value for key, value in found.items() if key.partition("{")[0] == series)
