"""The preemption scenario's workload: high-priority inference gangs arriving on a cluster kept full of training.

Two PriorityClasses (``training`` low, ``inference`` high, both ``PreemptLowerPriority``) and two streams of gangs:

- **training**: ``worker`` × N trays of 4 GPUs, N ∈ {2, 4, 8, 16} w.p. {.3, .3, .25, .15}; 40% of them with 1 or 2
  best-effort workers above ``minReplicas`` (elastic data parallelism: the job runs on with fewer); ``required``
  one NVLink clique 70% of the time, ``preferred`` otherwise; run time uniform in [1 h, 4 h]. Enough of them arrive
  in the first minute to ask for 1.1 × the cluster's GPUs, and more keep arriving (a Poisson process whose offered
  load is ``load`` × the GPUs), so the cluster stays full and a queue of training waits;
- **inference**: a ``leader`` and ``worker`` × W trays (LeaderWorkerSet-like multi-node serving), W ∈ {1, 3, 7, 15}
  w.p. {.3, .35, .25, .1} (8–64 GPUs), the whole gang ``required`` in one NVLink clique (tensor parallelism over
  NVLink); run time the trace's pod lifetimes capped at 1 h; a Poisson process offering a quarter of the GPUs.

All probabilities are our stated choices. Arrivals are merged in time order and named ``<kind>-NNNN`` in that order.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from benchmarks.generate.nodes import CLIQUE
from benchmarks.generate.shapes import GangShape, Pack, Role, leader_workers
from benchmarks.generate.traces import TraceDistributions
from benchmarks.generate.workload import Arrival, weighted

__all__ = ["PRIORITY_CLASSES", "priority_arrivals"]

TRAINING, INFERENCE = "training", "inference"
PRIORITY_CLASSES: tuple[dict[str, Any], ...] = tuple(
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": False,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": description,
    }
    for name, value, description in (
        (TRAINING, 100, "training jobs: run while nothing more urgent needs the GPUs"),
        (INFERENCE, 10_000, "serving: may evict training to start at once"),
    )
)
BURST = 1.1  # training asked for in the first minute, as a multiple of the cluster's GPUs
INFERENCE_LOAD = 0.25  # offered by the inference stream, as a share of the GPUs
TRAINING_SECONDS = (3600, 4 * 3600)
INFERENCE_MAX_SECONDS = 3600


def _training(rng: random.Random) -> GangShape:
    workers = weighted(rng, {2: 0.3, 4: 0.3, 8: 0.25, 16: 0.15})
    extra = weighted(rng, {1: 0.6, 2: 0.4}) if rng.random() < 0.4 else 0
    pack = Pack(required=CLIQUE) if rng.random() < 0.7 else Pack(preferred=CLIQUE)
    role = Role("worker", workers + extra, workers, 4)
    return GangShape(
        kind=TRAINING, roles=(role,), pack=pack, cpu_per_gpu=32, memory_gi_per_gpu=200, priority_class=TRAINING
    )


def _inference(rng: random.Random) -> GangShape:
    workers = weighted(rng, {1: 0.3, 3: 0.35, 7: 0.25, 15: 0.1})
    shape = leader_workers(workers=workers, gpus=4, pack=Pack(required=CLIQUE))
    return replace(shape, kind=INFERENCE, cpu_per_gpu=32, memory_gi_per_gpu=200, priority_class=INFERENCE)


def _stream(rng: random.Random, *, rate: float, start: float, draw: Any) -> Any:
    """Endless (at, shape, duration) of one Poisson stream from ``start``."""
    clock = start
    while True:
        clock += rng.expovariate(rate)
        yield clock, *draw()


def priority_arrivals(
    *, rng: random.Random, traces: TraceDistributions, capacity_gpus: int, count: int, load: float
) -> list[Arrival]:
    """``count`` gangs: the first-minute burst of training (at most half of them), then both streams merged."""

    def training() -> tuple[GangShape, int]:
        return _training(rng), rng.randint(*TRAINING_SECONDS)

    def inference() -> tuple[GangShape, int]:
        return _inference(rng), min(traces.duration(rng), INFERENCE_MAX_SECONDS)

    arrivals: list[Arrival] = []
    asked = 0
    while asked < BURST * capacity_gpus and len(arrivals) < max(1, count // 2):
        shape, duration = training()
        arrivals.append(Arrival(at_seconds=len(arrivals), duration_seconds=duration, shape=shape))
        asked += shape.guaranteed_gpus
    # Rates from the shapes' means (Little's law, as ``workload.sample_arrivals``): training 6.2 trays of 4 GPUs
    # for 2.5 h on average; inference 5.6 trays for the trace's capped lifetimes.
    mean_training = 4 * (0.3 * 2 + 0.3 * 4 + 0.25 * 8 + 0.15 * 16) * sum(TRAINING_SECONDS) / 2
    capped = [min(d, INFERENCE_MAX_SECONDS) for d in traces.durations]
    mean_inference = 4 * (1 + 0.3 * 1 + 0.35 * 3 + 0.25 * 7 + 0.1 * 15) * sum(capped) / len(capped)
    start = float(len(arrivals))
    streams = [
        _stream(rng, rate=load * capacity_gpus / mean_training, start=start, draw=training),
        _stream(rng, rate=INFERENCE_LOAD * capacity_gpus / mean_inference, start=start, draw=inference),
    ]
    heads = [next(stream) for stream in streams]
    while len(arrivals) < count:
        first = min(range(len(heads)), key=lambda i: heads[i][0])
        at, shape, duration = heads[first]
        arrivals.append(Arrival(at_seconds=round(at), duration_seconds=duration, shape=shape))
        heads[first] = next(streams[first])
    return arrivals
