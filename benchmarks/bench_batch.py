"""Queue-aware planning benchmark: the head of the queue (K gangs) planned in one model, beside the same gangs
planned one at a time in queue order (cpsat and topology-greedy), on a partly used 1,000-node cluster.

    .venv/bin/python -m benchmarks.bench_batch [--nodes 1000] [--gangs 16] [--reps 20] [--time-limit 0.2]

Cluster: 8-GPU nodes, 8 per NVLink domain (``nvidia.com/gpu.clique``), 4 domains per leaf, one zone; per draw a
share of nodes wholly used (``--full``: 25%, and a contended 58%), 40% partly used, the rest free (seeded).
Queue: K gangs of 2–16 pods of 1, 2, 4 or 8 GPUs, ``required`` one clique (50%), ``preferred`` one clique (30%)
or neither, priority 100 (30%) or 0, in arrival order; the view names their shapes (future fit). Every batch
passes ``batch_violations``.

Prints per policy: decision time (median, p99, max), GPUs started (all, and of priority 100) and gangs started,
mean over draws. Target: batch decision p99 ≤ 250 ms for K = 16 on 1,000 nodes.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from api.core import GPU
from placement import ClusterView, GangRequest, GroupRequest, PackScope, SolveOptions, Status, solve
from placement.batch import plan_batch
from placement.shapes import shapes_of
from placement.validation import batch_violations
from topology import HostSpec, Topology

CLIQUE = "nvidia.com/gpu.clique"
LEAF = "network.topology.nvidia.com/leaf"
ZONE = "topology.kubernetes.io/zone"
ALLOCATABLE = {GPU: 8, "cpu": 128_000, "pods": 110}
HIGH = 100


def make_topology(nodes: int) -> Topology:
    hosts = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        labels = {CLIQUE: f"cluster.{i // 8}", LEAF: f"leaf-{i // 32}", ZONE: "zone-a"}
        hosts.append(HostSpec(name, {"kubernetes.io/hostname": name, **labels}, ALLOCATABLE))
    return Topology(hosts)


def occupancy(topology: Topology, rng: random.Random, *, full: float = 0.25) -> dict[str, dict[str, int]]:
    """``full`` of the nodes wholly used, 40% partly used, the rest free."""
    free: dict[str, dict[str, int]] = {}
    for name in topology.hosts:
        roll = rng.random()
        used = 8 if roll < full else rng.randint(1, 7) if roll < full + 0.4 else 0
        free[name] = {GPU: 8 - used, "cpu": 128_000 - used * 12_000, "pods": 110 - used}
    return free


def make_queue(count: int, rng: random.Random) -> list[GangRequest]:
    queue = []
    for k in range(count):
        pods, gpus = rng.choice([2, 4, 8, 16]), rng.choice([1, 2, 4, 8])
        group = GroupRequest(
            "worker", tuple(f"bench/q{k}-{i}" for i in range(pods)), {GPU: gpus, "cpu": 8_000, "pods": 1}, pods
        )
        roll = rng.random()
        pack = PackScope(("worker",), required=CLIQUE) if roll < 0.5 else None
        if 0.5 <= roll < 0.8:
            pack = PackScope(("worker",), preferred=CLIQUE)
        priority = HIGH if rng.random() < 0.3 else 0
        queue.append(GangRequest("bench", f"q{k}", (group,), (pack,) if pack else (), priority))
    return queue


@dataclass
class Tally:
    seconds: list[float] = field(default_factory=list)
    gpus: list[int] = field(default_factory=list)
    high: list[int] = field(default_factory=list)
    gangs: list[int] = field(default_factory=list)

    def add(self, seconds: float, started: Sequence[GangRequest]) -> None:
        self.seconds.append(seconds)
        gpus = [sum(g.min_replicas * g.demand.get(GPU, 0) for g in r.groups) for r in started]
        self.gpus.append(sum(gpus))
        self.high.append(sum(n for n, r in zip(gpus, started, strict=True) if r.priority == HIGH))
        self.gangs.append(len(started))


def one_at_a_time(queue: Sequence[GangRequest], view: ClusterView, policy: str) -> list[GangRequest]:
    """The gangs in head order (priority, then age), each on what the ones before it left: today's extender."""
    free = {node: dict(units) for node, units in view.free.items()}
    started = []
    for request in sorted(queue, key=lambda r: (-r.priority, queue.index(r))):
        result = solve(request, ClusterView(view.topology, free, view.shapes), SolveOptions(policy=policy, workers=1))
        if result.status != Status.PLACED:
            continue
        started.append(request)
        demand = {pod: g.demand for g in request.groups for pod in g.pods}
        for pod, node in result.assignment.items():
            for resource, units in demand[pod].items():
                free[node][resource] -= units
    return started


def run(*, nodes: int, gangs: int, reps: int, time_limit: float, seed: int, full: float) -> dict[str, Tally]:
    topology = make_topology(nodes)
    tallies = {name: Tally() for name in ("batch", "one-by-one cpsat", "one-by-one topology-greedy")}
    warm = make_queue(gangs, random.Random(0))
    plan_batch(warm, ClusterView(topology, occupancy(topology, random.Random(0))), SolveOptions(workers=1))
    with Progress(transient=True) as progress:
        task = progress.add_task("planning", total=reps)
        for rep in range(reps):
            rng = random.Random(seed * 7919 + rep)
            queue = make_queue(gangs, rng)
            view = ClusterView(topology, occupancy(topology, rng, full=full), shapes_of(queue, topology))
            began = time.perf_counter()
            batch = plan_batch(queue, view, SolveOptions(time_limit_seconds=time_limit, workers=1), size=gangs)
            seconds = time.perf_counter() - began
            problems = batch_violations(queue, view, batch.results, batch.head)
            if problems:
                raise SystemExit(f"batch draw {rep}: invalid results: {problems}")
            started = [r for r in queue if batch.results[r.key].status == Status.PLACED]
            tallies["batch"].add(seconds, started)
            for policy in ("cpsat", "topology-greedy"):
                began = time.perf_counter()
                chosen = one_at_a_time(queue, replace(view), policy)
                tallies[f"one-by-one {policy}"].add(time.perf_counter() - began, chosen)
            progress.advance(task)
    return tallies


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(tallies: dict[str, Tally], console: Console, *, nodes: int, gangs: int, full: float) -> None:
    title = f"queue head of {gangs} gangs on {nodes:,} nodes, {full:.0%} of nodes wholly used"
    table = Table(title=f"{title} — decision time (ms wall) and what starts")
    for column in ("policy", "median", "p99", "max", "GPUs started", "priority-100 GPUs", "gangs started"):
        table.add_column(column, justify="right")
    for name, tally in tallies.items():
        ms = [s * 1000 for s in tally.seconds]
        table.add_row(
            name,
            f"{statistics.median(ms):.0f}",
            f"{_percentile(ms, 0.99):.0f}",
            f"{max(ms):.0f}",
            f"{statistics.fmean(tally.gpus):.1f}",
            f"{statistics.fmean(tally.high):.1f}",
            f"{statistics.fmean(tally.gangs):.2f}",
        )
    console.print(table)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gangs", type=int, default=16, help="K, the head of the queue planned together")
    parser.add_argument("--reps", type=int, default=20, help="occupancy and queue draws")
    parser.add_argument("--time-limit", type=float, default=0.2, help="seconds for the whole batch decision")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--full", default="0.25,0.58", help="shares of wholly used nodes, one run each (0.58: 2%% free nodes left)"
    )
    args = parser.parse_args(argv)
    for full in (float(f) for f in args.full.split(",")):
        tallies = run(
            nodes=args.nodes, gangs=args.gangs, reps=args.reps, time_limit=args.time_limit, seed=args.seed, full=full
        )
        report(tallies, Console(width=160), nodes=args.nodes, gangs=args.gangs, full=full)
    return 0


if __name__ == "__main__":
    sys.exit(main())
