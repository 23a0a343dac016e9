"""A fill benchmark over one snapshot's cluster: every policy, every seed, and the figures per policy."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from rich.progress import Progress

from benchmarks.packing.fgd import typical_pods
from benchmarks.packing.fill import fill
from benchmarks.packing.report import summarise_fill
from benchmarks.packing.templates import templates_from, templates_from_snapshot
from benchmarks.replay.fragmentation import make_fragmentation
from benchmarks.replay.loading import load_workload
from benchmarks.replay.solve_step import solve_options
from placement import SolveOptions
from placement.shapes import shapes_of
from scheduler.snapshot import load_snapshot

__all__ = ["fill_snapshot"]

log = logging.getLogger(__name__)


def fill_snapshot(path: str, policies: list[str], args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    """Fill ``path``'s cluster (its nodes, less the pods bound in it) with gangs of its own shapes, or of
    ``args.shapes``. ``cpsat`` is told the workload's shapes (its future-fit tier reads them); the baselines have
    no use for them."""
    snapshot = load_snapshot(path)
    workload, topology = load_workload(snapshot)
    templates = templates_from(args.shapes) if args.shapes else templates_from_snapshot(snapshot)
    start = {host.name: dict(host.allocatable) for host in workload.hosts}
    for node, demand in workload.background.values():
        for resource, units in demand.items():
            start[node][resource] = start[node].get(resource, 0) - units
    shapes = shapes_of(templates, topology)
    tasks = typical_pods(templates)
    fragmentation = make_fragmentation(topology)
    results: dict[str, Any] = {}
    for policy in policies:
        task = progress.add_task(f"{Path(path).name} · fill · {policy}", total=args.seeds)
        options: SolveOptions = solve_options(policy, time_limit_seconds=args.time_limit, workers=args.workers)
        runs = []
        for seed in range(1, args.seeds + 1):
            runs.append(
                fill(
                    templates,
                    topology=topology,
                    start=start,
                    seed=seed,
                    options=options,
                    shapes=shapes if policy == "cpsat" else (),
                    tasks=tasks,
                    fragmentation=fragmentation,
                )
            )
            progress.advance(task)
        results[policy] = summarise_fill(runs)
        log.info("fill policy=%s snapshot=%s unallocated=%s", policy, path, results[policy]["fillUnallocatedGpus"])
    return {"snapshot": path, "shapes": args.shapes or path, "policies": results}
