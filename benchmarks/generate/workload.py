"""Arrivals: a Poisson process whose rate is tuned so the offered load is ``load`` × the cluster's GPUs.

Offered load = rate × mean(guaranteed GPUs × run time) / GPUs in the cluster (Little's law), computed on the
sampled gangs themselves, so ``load`` > 1 means the cluster is contended by construction.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.generate.shapes import GangShape
from benchmarks.generate.traces import TraceDistributions


@dataclass(frozen=True)
class Arrival:
    at_seconds: int
    duration_seconds: int
    shape: GangShape


def sample_arrivals(
    *,
    count: int,
    load: float,
    capacity_gpus: int,
    shape: Callable[[random.Random], GangShape],
    traces: TraceDistributions,
    rng: random.Random,
) -> list[Arrival]:
    shapes = [shape(rng) for _ in range(count)]
    durations = [traces.duration(rng) for _ in range(count)]
    mean_work = sum(s.guaranteed_gpus * d for s, d in zip(shapes, durations, strict=True)) / count
    rate = load * capacity_gpus / mean_work  # gangs per second
    arrivals = []
    clock = 0.0
    for shape_, duration in zip(shapes, durations, strict=True):
        arrivals.append(Arrival(at_seconds=round(clock), duration_seconds=duration, shape=shape_))
        clock += rng.expovariate(rate)
    return arrivals


def weighted(rng: random.Random, table: dict[int, float]) -> int:
    """One key of ``table`` drawn with probability proportional to its value."""
    keys = list(table)
    return rng.choices(keys, weights=[table[k] for k in keys])[0]
