"""Solve-time benchmark of the placement engine: cpsat beside topology-greedy on generated GPU clusters.

    .venv/bin/python -m benchmarks.bench_placement [--reps 20] [--nodes 256,1024,4096,10000] [--pods 8,64,256]

Clusters: 8-GPU nodes, 16 per NVLink domain (``nvidia.com/gpu.clique``), 8 domains per block, blocks spread
over 4 zones; 25% of nodes wholly used, 40% partly used (a seeded random share of GPUs and CPU), the rest free.
Each repetition draws a fresh occupancy on the same topology.

Gangs: a 1-pod CPU leader plus workers of 2 GPUs and 8 cores, ``required`` one block and ``preferred`` one
NVLink domain. Infeasible cases ask for a pack that no domain can hold: 8 pods in one host, 64 or 256 pods
in one NVLink domain. Every result is checked by :func:`placement.validation.violations`.

Targets (2-core machine): 64 pods on 1,024 nodes, median ≤ 50 ms; 256 pods on 10,000 nodes, p99 ≤ 1 s;
infeasible decided within the same bounds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from api.core import GPU
from placement import ClusterView, GangRequest, GroupRequest, PackScope, SolveOptions, Status, solve, violations
from topology import HostSpec, Topology

CLIQUE = "nvidia.com/gpu.clique"
BLOCK = "network.topology.nvidia.com/block"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
PER_CLIQUE = 16
CLIQUES_PER_BLOCK = 8
ZONES = 4
ALLOCATABLE = {GPU: 8, "cpu": 128_000, "pods": 110}


def make_topology(nodes: int) -> Topology:
    hosts = []
    blocks = max(1, -(-nodes // (PER_CLIQUE * CLIQUES_PER_BLOCK)))
    for i in range(nodes):
        clique = i // PER_CLIQUE
        block = clique // CLIQUES_PER_BLOCK
        name = f"node-{i:05d}"
        labels = {
            HOSTNAME: name,
            CLIQUE: f"cluster.{clique}",
            BLOCK: f"block-{block}",
            ZONE: f"zone-{block * ZONES // blocks}",
        }
        hosts.append(HostSpec(name, labels, ALLOCATABLE))
    return Topology(hosts)


def occupancy(topology: Topology, rng: random.Random) -> dict[str, dict[str, int]]:
    free: dict[str, dict[str, int]] = {}
    for name in topology.hosts:
        roll = rng.random()
        if roll < 0.25:
            used_gpus = 8
        elif roll < 0.65:
            used_gpus = rng.randint(1, 7)
        else:
            used_gpus = 0
        used_cpu = used_gpus * 12_000 + rng.choice([0, 2000])
        free[name] = {GPU: 8 - used_gpus, "cpu": 128_000 - used_cpu, "pods": 110 - used_gpus}
    return free


def make_gang(pods: int, *, feasible: bool) -> GangRequest:
    leader = GroupRequest("leader", ("bench/leader-0",), {"cpu": 4000, "pods": 1}, 1)
    workers = GroupRequest(
        "worker", tuple(f"bench/worker-{i}" for i in range(pods - 1)), {GPU: 2, "cpu": 8000, "pods": 1}, pods - 1
    )
    if feasible:
        pack = PackScope(("leader", "worker"), required=BLOCK, preferred=CLIQUE)
    else:
        pack = PackScope(("leader", "worker"), required=HOSTNAME if pods <= 8 else CLIQUE)
    return GangRequest("bench", f"gang-{pods}", (leader, workers), (pack,))


@dataclass
class Cell:
    nodes: int
    pods: int
    feasible: bool
    times: dict[str, list[float]]  # wall seconds, as solve() reports them
    cpu: dict[str, list[float]]  # process CPU seconds (all threads): what the load of others cannot inflate
    placed: dict[str, int]
    scores: dict[str, list[float]]


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(nodes_list: Sequence[int], pods_list: Sequence[int], reps: int, seed: int) -> list[Cell]:
    cells: list[Cell] = []
    policies = ("cpsat", "topology-greedy")
    # One untimed solve first: the first call in a process pays one-off imports and solver start-up.
    warm = make_topology(64)
    for policy in policies:
        solve(make_gang(8, feasible=True), ClusterView(warm, occupancy(warm, random.Random(0))), SolveOptions(policy))
    with Progress() as progress:
        task = progress.add_task("solving", total=len(nodes_list) * len(pods_list) * 2 * reps)
        for nodes in nodes_list:
            topology = make_topology(nodes)
            for pods in pods_list:
                for feasible in (True, False):
                    cell = Cell(
                        nodes,
                        pods,
                        feasible,
                        {p: [] for p in policies},
                        {p: [] for p in policies},
                        dict.fromkeys(policies, 0),
                        {},
                    )
                    request = make_gang(pods, feasible=feasible)
                    for rep in range(reps):
                        view = ClusterView(topology, occupancy(topology, random.Random(seed * 7919 + rep)))
                        for policy in policies:
                            cpu = time.process_time()
                            result = solve(request, view, SolveOptions(policy=policy))
                            cell.cpu[policy].append(time.process_time() - cpu)
                            problems = violations(request, view, result)
                            if problems:
                                raise SystemExit(f"{policy} {nodes}n {pods}p: invalid result: {problems}")
                            cell.times[policy].append(result.solve_seconds)
                            if result.status == Status.PLACED:
                                cell.placed[policy] += 1
                                cell.scores.setdefault(policy, []).append(result.placement_score or 0.0)
                        progress.advance(task)
                    cells.append(cell)
    return cells


def report(cells: Sequence[Cell], console: Console) -> None:
    table = Table(title="placement solve time, ms wall (cpu: process CPU time, all threads) — cpsat vs topology-greedy")
    for column in (
        "nodes",
        "pods",
        "case",
        "cpsat median",
        "p99",
        "max",
        "cpu median",
        "placed",
        "score",
        "greedy median",
        "greedy cpu",
        "greedy placed",
        "greedy score",
        "cpsat/greedy",
    ):
        table.add_column(column, justify="right")
    for cell in cells:
        cp, gr = cell.times["cpsat"], cell.times["topology-greedy"]
        reps = len(cp)
        ratio = statistics.median(cp) / max(statistics.median(gr), 1e-9)
        table.add_row(
            f"{cell.nodes:,}",
            str(cell.pods),
            "feasible" if cell.feasible else "infeasible",
            f"{statistics.median(cp) * 1000:.1f}",
            f"{_percentile(cp, 0.99) * 1000:.1f}",
            f"{max(cp) * 1000:.1f}",
            f"{statistics.median(cell.cpu['cpsat']) * 1000:.1f}",
            f"{cell.placed['cpsat']}/{reps}",
            f"{statistics.mean(cell.scores.get('cpsat', [0.0])):.3f}",
            f"{statistics.median(gr) * 1000:.1f}",
            f"{statistics.median(cell.cpu['topology-greedy']) * 1000:.1f}",
            f"{cell.placed['topology-greedy']}/{reps}",
            f"{statistics.mean(cell.scores.get('topology-greedy', [0.0])):.3f}",
            f"{ratio:.1f}×",
        )
    console.print(table)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="256,1024,4096,10000", help="cluster sizes, comma separated")
    parser.add_argument("--pods", default="8,64,256", help="gang sizes, comma separated")
    parser.add_argument("--reps", type=int, default=20, help="occupancies drawn per cell (p99 of 20 is the max)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    nodes = [int(n) for n in args.nodes.split(",")]
    pods = [int(p) for p in args.pods.split(",")]
    report(run(nodes, pods, args.reps, args.seed), Console(width=200))
    return 0


if __name__ == "__main__":
    sys.exit(main())
