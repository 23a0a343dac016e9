"""What ``grove-extender bench`` does once its arguments are read (``benchmarks.cli`` registers the command): a
replay of each snapshot through the policies side by side, or with ``--fill`` the packing run."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from benchmarks.packing.report import fill_table
from benchmarks.packing.run import fill_snapshot
from benchmarks.packing.templates import TemplateError
from benchmarks.policies import BATCH
from benchmarks.replay.batch_step import BatchStep
from benchmarks.replay.coordinator_step import CoordinatorStep
from benchmarks.replay.decision import BatchDecisionStep, DecisionStep
from benchmarks.replay.engine import replay
from benchmarks.replay.fragmentation import make_fragmentation
from benchmarks.replay.loading import WorkloadError, load_workload
from benchmarks.replay.metrics import summarise
from benchmarks.replay.preemption import MODES, OFF, Preemptor
from benchmarks.replay.quality import make_domain_probe
from benchmarks.replay.report import markdown_table
from benchmarks.replay.solve_step import POD_BY_POD, SolveStep, solve_options
from placement import POLICIES
from scheduler.extender.translation.cluster_view import holds_capacity
from scheduler.snapshot import Snapshot, SnapshotError, load_snapshot
from topology import Topology

log = logging.getLogger(__name__)

BATCH_TIME_LIMIT = 0.25  # seconds per batch decision unless --time-limit says otherwise
# All-or-nothing policies whose fit keeps required packs, one gang per decision: the victim choosers check fits with
# the placement policy itself, and the engine preempts for steps that decide one gang at a time.
PREEMPTING = ("cpsat", "topology-greedy")
PLOT_HINT = "bench: --plot needs matplotlib, the 'bench' extra: pip install 'grove-extender[bench]'"


def _step(
    policy: str, *, snapshot: Snapshot, topology: Topology, args: argparse.Namespace
) -> DecisionStep | BatchDecisionStep:
    """Gang policies go through the coordinator ``serve`` uses; pod-by-pod baselines model kube-scheduler alone
    (no extender), so they call their policy directly. ``cpsat-batch`` calls ``placement.batch`` directly: the
    engine asks the coordinator about one gang per decision, a simulated day apart, which would expire the
    reservations the coordinator's own batches make for the other gangs before their turn."""
    if policy == BATCH:
        limit = args.time_limit if args.time_limit is not None else BATCH_TIME_LIMIT
        options = solve_options("cpsat", time_limit_seconds=limit, workers=args.workers)
        return BatchStep(topology=topology, size=args.batch_size, options=options)
    if policy in POD_BY_POD or args.direct:
        return SolveStep(policy=policy, topology=topology, time_limit_seconds=args.time_limit, workers=args.workers)
    background = [pod for pod in snapshot.pods if holds_capacity(pod)]
    return CoordinatorStep(
        policy=policy,
        nodes=snapshot.nodes,
        background=background,
        priority_classes=snapshot.priority_classes,
        time_limit_seconds=args.time_limit,
        workers=args.workers,
    )


def _modes(args: argparse.Namespace) -> list[str]:
    return [mode.strip() for mode in args.preemption.split(",") if mode.strip()]


def _row(policy: str, mode: str) -> str:
    """A result's name: the policy, and the preemption it ran with when that is not off."""
    return policy if mode == OFF else f"{policy}, preemption {mode}"


def _bench_snapshot(path: str, policies: list[str], args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    snapshot = load_snapshot(path)
    workload, topology = load_workload(snapshot, default_duration=args.duration)
    fragmentation = make_fragmentation(topology)
    probe = make_domain_probe(topology)
    horizon = args.horizon_seconds or max((gang.arrival for gang in workload.gangs), default=0.0)
    results: dict[str, Any] = {}
    modes = _modes(args)
    for policy, mode in ((policy, mode) for policy in policies for mode in modes):
        name = _row(policy, mode)
        task = progress.add_task(f"{Path(path).name} · {name}", total=horizon or 1.0)
        step = _step(policy, snapshot=snapshot, topology=topology, args=args)
        preemptor = None
        if mode != OFF:
            options = solve_options(policy, time_limit_seconds=args.time_limit, workers=args.workers)
            preemptor = Preemptor(mode, options, topology)
        began = time.perf_counter()
        try:
            outcome = replay(
                workload,
                step,
                horizon=horizon,
                fragmentation=fragmentation,
                probe=probe,
                progress=lambda now, task=task: progress.update(task, completed=now),  # type: ignore[misc]
                preemptor=preemptor,
            )
        finally:
            if isinstance(step, CoordinatorStep):
                step.close()
        progress.update(task, completed=horizon or 1.0)
        results[name] = summarise(outcome, topology)
        route = "coordinator" if isinstance(step, CoordinatorStep) else "placement.solve"
        results[name]["decisionPath"] = f"placement.batch (K={args.batch_size})" if policy == BATCH else route
        results[name]["replaySeconds"] = round(time.perf_counter() - began, 1)
        log.info("bench policy=%s snapshot=%s gpu_hours=%s", name, path, results[name]["gpuHoursDelivered"])
    return {"snapshot": path, "policies": results}


def bench(args: argparse.Namespace) -> int:
    policies = [name.strip() for name in args.policy.split(",") if name.strip()]
    console = Console(stderr=True)
    unknown = [name for name in policies if name not in POLICIES and (name != BATCH or args.fill)]
    if unknown or not policies:
        console.print(
            f"bench: --policy must name some of {', '.join(POLICIES)} (or {BATCH} for a replay); unknown: {unknown}",
            style="red",
            markup=False,
            soft_wrap=True,
        )
        return 2
    modes = _modes(args)
    wrong = [mode for mode in modes if mode not in MODES]
    preempting = [mode for mode in modes if mode != OFF]
    if wrong or not modes or len(set(modes)) != len(modes):
        console.print(
            f"bench: --preemption must name some of {', '.join(MODES)}, each once; got {args.preemption!r}",
            style="red",
            markup=False,
            soft_wrap=True,
        )
        return 2
    if preempting and (args.fill or any(name not in PREEMPTING for name in policies)):
        console.print(
            f"bench: --preemption {','.join(preempting)} replays the policies {', '.join(PREEMPTING)} only (all-or-"
            "nothing, one gang at a time, required packs kept: what the victim choosers check a fit with); not "
            "with --fill",
            style="red",
            markup=False,
            soft_wrap=True,
        )
        return 2
    if args.fill and args.seeds < 1:
        console.print("bench: --seeds must be at least 1", style="red", markup=False, soft_wrap=True)
        return 2
    if args.plot:
        # Imported here: matplotlib is the 'bench' extra, absent from the runtime image. Checked before the replays,
        # so a missing extra costs the user a second, not a whole benchmark.
        try:
            from benchmarks.packing.plot import write_fill_plot
            from benchmarks.replay.plot import write_plot
            from benchmarks.replay.preemption_plot import has_priorities, write_preemption_plot
        except ImportError:
            console.print(PLOT_HINT, style="red", markup=False, soft_wrap=True)
            return 2
    runs = []
    try:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%" + ("" if args.fill else " of window")),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            for path in args.snapshot:
                bench = fill_snapshot if args.fill else _bench_snapshot
                runs.append(bench(path, policies, args, progress))
    except (SnapshotError, WorkloadError, TemplateError) as err:
        console.print(f"bench: {err}", style="red", markup=False, soft_wrap=True)
        return 2
    for run_ in runs:
        if args.fill:
            table = fill_table(str(run_["snapshot"]), run_["policies"], seeds=args.seeds, shapes=run_["shapes"])
        else:
            table = markdown_table(str(run_["snapshot"]), run_["policies"])
        sys.stdout.write(table + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(runs[0] if len(runs) == 1 else runs, indent=1) + "\n")
    if args.plot:
        if args.fill:
            write_fill_plot(runs, args.plot)
        elif has_priorities(runs):
            write_preemption_plot(runs, args.plot)
        else:
            write_plot(runs, args.plot)
    return 0
