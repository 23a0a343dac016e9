"""Where a plan's time goes: ``bench_extender``'s cluster planned gang by gang, timed, then once more under cProfile.

    .venv/bin/python -m benchmarks.profile_plan [--nodes 1000] [--gangs 100] [--pods-per-gang 8] [--top 15]

The cluster and gangs are ``bench_extender``'s (8-GPU nodes, NVLink domains of 8 nodes, gangs of 8 × 2-GPU pods
``required`` in one ``nvidia.com/gpu.clique``). Gangs are planned as ``grove-extender plan`` plans them: in
arrival order, each on what the earlier ones left (the same ``placement.solve`` calls the extender's coordinator
makes, minus the HTTP and the store). Prints wall time per plan (median, p99) from an unprofiled pass, then the
functions with the most cumulative time from a profiled pass, with their share of the total.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.bench_extender import make_cluster
from placement import SolveOptions
from scheduler.cli.plan import plan_snapshot
from scheduler.extender.translation.cluster_view import snapshot_view
from scheduler.snapshot import dump_snapshot, load_snapshot


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gangs", type=int, default=100)
    parser.add_argument("--pods-per-gang", type=int, default=8)
    parser.add_argument("--top", type=int, default=15, help="functions shown from the profile")
    args = parser.parse_args(argv)
    items = make_cluster(nodes=args.nodes, gangs=args.gangs, pods_per_gang=args.pods_per_gang, gpus_per_pod=2)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster.json"
        dump_snapshot(items, path)
        snapshot = load_snapshot(path)
    view = snapshot_view(snapshot)
    options = SolveOptions()
    plan_snapshot(snapshot, view, options)  # the first pass pays imports and solver start-up
    began = time.perf_counter()
    entries = plan_snapshot(snapshot, view, options)
    wall = time.perf_counter() - began
    seconds = sorted(entry["solveSeconds"] * 1000 for entry in entries)
    p99 = seconds[min(len(seconds) - 1, int(0.99 * len(seconds)))]
    placed = sum(1 for entry in entries if entry["status"] == "Placed")
    print(f"cluster: {args.nodes} nodes, {args.gangs} gangs × {args.pods_per_gang} pods; {placed} placed")
    print(
        f"per plan: {wall * 1000 / max(1, len(entries)):.1f} ms wall (request building included); placement.solve "
        f"median {statistics.median(seconds):.1f} ms, p99 {p99:.1f} ms, max {seconds[-1]:.1f} ms"
    )
    profile = cProfile.Profile()
    profile.enable()
    plan_snapshot(snapshot, view, options)
    profile.disable()
    stats = pstats.Stats(profile)
    total = max(stat[3] for stat in stats.stats.values())  # type: ignore[attr-defined]
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][3])  # type: ignore[attr-defined]
    print(f"profiled pass: {total:.2f} s; cumulative time per function, share of the pass:")
    shown = 0
    for (filename, line, name), (_, calls, _, cumulative, _) in rows:
        if "/placement/" not in filename and "/scheduler/" not in filename:
            continue
        where = filename.split("/placement/")[-1] if "/placement/" in filename else filename.split("/scheduler/")[-1]
        print(f"  {cumulative / total:6.1%}  {cumulative:7.3f} s  {calls:>7} calls  {where}:{line}({name})")
        shown += 1
        if shown >= args.top:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
