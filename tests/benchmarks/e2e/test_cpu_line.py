"""bench_e2e's CPU line: each process's seconds as milliseconds per bound pod, by name."""

from __future__ import annotations

from benchmarks.e2e.processes import ms_per_pod


def test_seconds_become_milliseconds_per_pod_sorted_by_process() -> None:
    assert ms_per_pod({"extender": 1.5, "etcd": 0.25}, 500) == "etcd 0.50, extender 3.00"


def test_no_pod_bound_counts_as_one_rather_than_dividing_by_zero() -> None:
    assert ms_per_pod({"kube-scheduler": 0.002}, 0) == "kube-scheduler 2.00"
