"""How long one reconcile pass of a large PodCliqueSet takes, against the in-memory API.

The user guide's multi-node disaggregated example (13 pods per PodCliqueSet replica) scaled to ``--replicas``
replicas: the first ``converge`` creates everything (pods, gangs, Services and, where the reconciler makes them,
PodCliques and PodCliqueScalingGroups); a steady pass then reads it all back and must write nothing. Reported as
the median of ``--reps`` runs of each, with the writes issued, so a change in what one pass does shows up here.

    python -m benchmarks.bench_reconcile [--replicas 100] [--reps 5]
"""

from __future__ import annotations

import argparse
import copy
import random
import statistics
import time
from pathlib import Path
from typing import Any

import yaml

from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.memory_client import InMemoryApi

EXAMPLE = Path(__file__).resolve().parents[1] / "deploy" / "examples" / "multinode-disaggregated.yaml"


def _pcs(replicas: int) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    document["spec"]["replicas"] = replicas
    return document


def _run(replicas: int, seed: int) -> tuple[float, float, int, int]:
    api = InMemoryApi()
    api.apply(copy.deepcopy(_pcs(replicas)))
    reconciler = Reconciler(api, rng=random.Random(seed))
    started = time.perf_counter()
    reconciler.converge(max_rounds=50)
    cold = time.perf_counter() - started
    writes = len(api.writes)
    started = time.perf_counter()
    outcome = reconciler.reconcile("default", "multinode-disaggregated")
    steady = time.perf_counter() - started
    return cold, steady, writes, outcome.writes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    runs = [_run(args.replicas, seed) for seed in range(args.reps)]
    pods = 13 * args.replicas  # per PCS replica: (1 + 4) prefill pods × 2 group replicas + (1 + 2) decode pods
    print(f"PodCliqueSet multinode-disaggregated, replicas={args.replicas} ({pods} pods), {args.reps} runs")
    print(f"  converge from empty: median {statistics.median(r[0] for r in runs) * 1000:.0f} ms, {runs[0][2]} writes")
    steady = statistics.median(r[1] for r in runs) * 1000
    print(f"  steady pass:         median {steady:.0f} ms, {runs[0][3]} writes")


if __name__ == "__main__":
    main()
