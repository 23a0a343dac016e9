"""Distributions read from the public Alibaba traces in ``../shared/data`` (see ``benchmarks/README.md``).

- Run time: lifetimes (``deletion_time − creation_time``) of GPU pods that finished (``Succeeded``/``Failed``) in
  ``openb_pod_list_default.csv`` (Alibaba, "Beware of Fragmentation", USENIX ATC '23), clipped to
  [``MIN_SECONDS``, ``MAX_SECONDS``] so that a replay is neither all noise nor one job.
- GPUs per pod: ``num_gpu`` of GPU pods in ``openb_pod_list_multigpu50.csv`` (the multi-GPU-heavy sample).
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass
from pathlib import Path

MIN_SECONDS = 600
MAX_SECONDS = 8 * 3600


@dataclass(frozen=True)
class TraceDistributions:
    durations: tuple[int, ...]  # sorted, clipped
    pod_gpus: tuple[int, ...]  # sorted

    def duration(self, rng: random.Random) -> int:
        return rng.choice(self.durations)

    def pod_gpu_count(self, rng: random.Random, *, at_most: int) -> int:
        """A per-pod GPU count from the trace, conditioned on fitting a node with ``at_most`` GPUs."""
        fitting = [count for count in self.pod_gpus if count <= at_most]
        return rng.choice(fitting)


def load_distributions(data_dir: Path) -> TraceDistributions:
    openb = data_dir / "alibaba-gpu-v2023"
    durations = []
    with (openb / "openb_pod_list_default.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["num_gpu"] == "0" or row["pod_phase"] not in ("Succeeded", "Failed") or not row["deletion_time"]:
                continue
            lifetime = int(row["deletion_time"]) - int(row["creation_time"])
            if lifetime > 0:
                durations.append(min(max(lifetime, MIN_SECONDS), MAX_SECONDS))
    pod_gpus = []
    with (openb / "openb_pod_list_multigpu50.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            count = int(row["num_gpu"])
            if count > 0:
                pod_gpus.append(count)
    if not durations or not pod_gpus:
        raise ValueError(f"traces under {openb}: no finished GPU pods or no GPU pods found")
    return TraceDistributions(durations=tuple(sorted(durations)), pod_gpus=tuple(sorted(pod_gpus)))
