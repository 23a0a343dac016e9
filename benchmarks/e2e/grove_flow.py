"""``bench_e2e --real --grove-flow``: Grove's whole flow, from ``kubectl apply`` of PodCliqueSets to bound pods, on a
real kube-apiserver and kube-scheduler, through the extender and, in the same run, to kube-scheduler alone.

What a user does: PodCliqueSets created at once (or ``--rate`` a second), each one clique of ``--pods-per-gang`` pods
of one GPU. ``grove-extender reconcile`` (as its Deployment runs it, limited to the phase's namespace) makes their
PodCliques, PodGangs and pods, the pods gated until their PodGang exists, as Grove's operator does; kube-scheduler
binds them. Two phases on one control plane, each in a namespace of its own, the former's pods deleted first:

1. **through the extender**: the reconciler naming ``grove`` as the pods' scheduler, the extender and kube-scheduler
   with the shipped ``grove`` profile;
2. **alone**: the reconciler with ``--scheduler-name default-scheduler``, kube-scheduler with its default profile.

Printed per phase: the makespan (first PodCliqueSet created to last pod bound) and the ratio of the two; how fast the
reconciler created the pods (the first PodCliqueSet to the last pod created); the API requests per PodCliqueSet by
verb and resource (every client's: the reconciler's are those of PodCliqueSets, PodCliques, PodGangs, pods and their
RBAC); and the CPU per bound pod of every process, the extender's counted whole from the first PodCliqueSet to the
last binding and a few seconds of status writes after, every thread.

Then the extender's and the reconciler's CPU by thread; ``--profile DIR`` keeps a py-spy profile of each over the
flow (``python -m benchmarks.e2e.profile DIR/extender-flow.txt`` sums it by activity).

    KUBEBUILDER_ASSETS=… python -m benchmarks.bench_e2e --real --grove-flow [--gangs 375] [--rate 0]
        [--reconcile-flags '--workers 8 --qps 500 --burst 500'] [--profile DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import Progress

from benchmarks.controlplane.binds import BindTimes
from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.nodes import GPU
from benchmarks.controlplane.supervisor import Child
from benchmarks.e2e import cprofile, pprof
from benchmarks.e2e.counters import Counters, api_counters, extender_counters, per_pod, short
from benchmarks.e2e.perf import PerfRecord
from benchmarks.e2e.perf import summary as perf_summary
from benchmarks.e2e.phase import QPS
from benchmarks.e2e.processes import Sampler, by_thread, cpu_seconds, ms_per_pod, thread_cpu, thread_names

__all__ = ["FlowPhase", "flow_report", "pcs_manifest", "run_phase"]

PROFILE_SECONDS = 30.0  # kube-apiserver's CPU profile covers the flow's first half minute
SETTLE_SECONDS = 4.0  # after the last bind: the PodGang and PodCliqueSet status writes that follow


def pcs_manifest(name: str, namespace: str, *, pods: int, gpus: int = 1) -> dict[str, Any]:
    """One PodCliqueSet replica of one clique of ``pods`` pods, each asking for ``gpus`` GPUs; no schedulerName, so
    the reconciler's ``--scheduler-name`` decides who places them."""
    resources = {"requests": {"cpu": "1", "memory": "4Gi", GPU: str(gpus)}, "limits": {GPU: str(gpus)}}
    container = {"name": "worker", "image": "nvcr.io/nvidia/pytorch:25.01-py3", "resources": resources}
    spec = {"roleName": "worker", "replicas": pods, "podSpec": {"containers": [container]}}
    clique = {"name": "worker", "spec": spec}
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 1, "template": {"cliques": [clique]}},
    }


@dataclass
class FlowPhase:
    mode: str
    sets: int
    total: int
    bound: int = 0
    created: int = 0
    creating_seconds: float = 0.0  # first PodCliqueSet created → last pod created
    makespan: float = 0.0  # first PodCliqueSet created → last pod bound
    cpu: dict[str, float] = field(default_factory=dict)  # process → CPU seconds from the first create to settled
    api_counters: Counters = field(default_factory=dict)  # per PodCliqueSet
    by_thread: dict[str, dict[str, float]] = field(default_factory=dict)  # our process → thread name → CPU seconds
    extender_counters: Counters = field(default_factory=dict)  # per bound pod, from the first create to settled
    extender_detail: str = (
        ""  # with --perf or --cprofile: the extender's CPU by shared object, its main thread's by function
    )

    @property
    def created_per_second(self) -> float:
        return self.created / self.creating_seconds if self.creating_seconds else 0.0


def _create(plane: ControlPlane, namespace: str, names: list[str], *, pods: int, rate: float) -> None:
    """Every PodCliqueSet at once (``rate`` 0), or ``rate`` a second, as ``kubectl apply`` of a folder or a job
    queue would send them."""
    path = f"/apis/grove.io/v1alpha1/namespaces/{namespace}/podcliquesets"

    def post(name: str) -> Any:
        return lambda: plane.api.acall("POST", path, pcs_manifest(name, namespace, pods=pods))

    if rate <= 0:
        plane.api.many([post(name) for name in names])
        return
    started = time.monotonic()
    for index, name in enumerate(names):
        time.sleep(max(0.0, started + index / rate - time.monotonic()))
        plane.api.many([post(name)])


def _profile_api_server(plane: ControlPlane, output: Path) -> threading.Thread:
    """kube-apiserver's CPU profile over the first ``PROFILE_SECONDS`` of the flow (its ``/debug/pprof``): where the
    API server, the flow's busiest process, spends it."""

    def run() -> None:
        try:
            output.write_bytes(pprof.fetch(plane.server.url, token=plane.server.admin_token, seconds=PROFILE_SECONDS))
        except OSError as err:
            print(f"bench --grove-flow: no kube-apiserver profile: {err}")

    thread = threading.Thread(target=run, name="pprof-apiserver", daemon=True)
    thread.start()
    return thread


def run_phase(plane: ControlPlane, args: argparse.Namespace, folder: Path, *, through_extender: bool) -> FlowPhase:
    mode = "extender" if through_extender else "alone"
    namespace = f"flow-{mode}"
    plane.ensure_namespace(namespace)
    names = [f"pcs-{index:05d}" for index in range(args.gangs)]
    phase = FlowPhase(mode, sets=len(names), total=len(names) * args.pods_per_gang)
    scheduler_name = "grove" if through_extender else "default-scheduler"
    flags = ("--namespace", namespace, "--scheduler-name", scheduler_name, *shlex.split(args.reconcile_flags))
    reconciler = plane.start_reconciler(extra=flags, wait=True)
    scheduler: Child
    profiled = Path(args.cprofile) / "extender-main-flow.prof" if args.cprofile and through_extender else None
    if through_extender:
        with cprofile.environment(profiled) if profiled else contextlib.nullcontext():
            plane.start_extender(extra=("--log-level=warning", *(("--no-nominate",) if args.no_nominate else ())))
        scheduler = plane.start_scheduler(overrides=QPS)
    else:
        scheduler = plane.start_plain_scheduler(overrides=QPS)
    pids = {"reconciler": reconciler.pid, "kube-scheduler": scheduler.pid, "kube-apiserver": plane.server.process.pid,
            "etcd": plane.server.etcd.pid}  # fmt: skip
    if through_extender and plane.extender is not None:
        pids["extender"] = plane.extender.child.pid
    created, bound = BindTimes(plane.api, namespace, bound_only=False), BindTimes(plane.api, namespace)
    api_before = api_counters(plane, watch_events=False)
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    extender_before = extender_counters(plane) if through_extender else {}
    profiling = _profile_api_server(plane, folder / f"apiserver-{mode}.pb.gz") if through_extender else None
    ours = {name: pids[name] for name in ("extender", "reconciler") if name in pids}
    threads_before = {name: thread_cpu(pid) for name, pid in ours.items()}
    folder_for = Path(args.profile) if args.profile else None
    if folder_for is not None:
        folder_for.mkdir(parents=True, exist_ok=True)
    samplers = [Sampler.start(pid, folder_for / f"{name}-flow.txt") for name, pid in ours.items()] if folder_for else []
    extender = pids.get("extender")
    recorder = (
        PerfRecord.start(extender, Path(args.perf) / "extender-flow.perf.data") if args.perf and extender else None
    )
    if profiled and extender:
        cprofile.start(extender)
    started = time.monotonic()
    _create(plane, namespace, names, pods=args.pods_per_gang, rate=args.rate)
    with Progress(transient=True) as progress:
        making = progress.add_task(f"{mode}: pods created", total=phase.total)
        binding = progress.add_task(f"{mode}: pods bound", total=phase.total)
        while bound.count() < phase.total and time.monotonic() - started < args.deadline:
            progress.update(making, completed=created.count())
            progress.update(binding, completed=bound.count())
            time.sleep(0.5)
    time.sleep(SETTLE_SECONDS)
    phase.cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
    threads_after = {name: thread_cpu(pid) for name, pid in ours.items()}
    for sampler in samplers:
        sampler.stop()  # before the names: py-spy cannot dump a process another py-spy is sampling
    for name, pid in ours.items():
        phase.by_thread[name] = by_thread(threads_before[name], threads_after[name], thread_names(pid))
    details = []
    if recorder is not None and extender:
        recorder.stop()
        details.append(perf_summary(recorder.output, thread_names(extender)))
    if profiled and extender and cprofile.stop(extender, profiled):
        details.append(cprofile.summary(profiled, max(bound.count(), 1)))
    phase.extender_detail = "\n".join(details)
    phase.api_counters = per_pod(api_before, api_counters(plane, watch_events=False), phase.sets, at_least=0.01)
    if through_extender:
        after = extender_counters(plane)
        phase.extender_counters = per_pod(extender_before, after, len(bound.first_bound()), at_least=0.001)
    if profiling is not None:
        profiling.join(timeout=PROFILE_SECONDS + 90)
    made, placed = created.first_bound().values(), bound.first_bound().values()
    created.stop()
    bound.stop()
    phase.created, phase.bound = len(made), len(placed)
    phase.creating_seconds = max(made, default=started) - started
    phase.makespan = max(placed, default=started) - started
    for child in (scheduler, reconciler, *((plane.extender.child,) if through_extender and plane.extender else ())):
        child.stop()
    plane.api.delete(f"/api/v1/namespaces/{namespace}/pods", gracePeriodSeconds=0)  # the next phase's GPUs
    while plane.api.items(f"/api/v1/namespaces/{namespace}/pods", limit=1):
        time.sleep(0.5)
    return phase


def flow_report(phases: list[FlowPhase], args: argparse.Namespace, *, load: str) -> None:
    print(f"Grove's flow on a real kube-apiserver + kube-scheduler v1.36: {args.nodes} nodes × 4 GPUs, {args.gangs} "
          f"PodCliqueSets × {args.pods_per_gang} pods of 1 GPU created "
          f"{'at once' if args.rate <= 0 else f'{args.rate:g} a second'}; reconcile flags "
          f"{args.reconcile_flags or '(defaults)'}; load {load}")  # fmt: skip
    for phase in phases:
        cpu = ms_per_pod(phase.cpu, phase.bound)
        print(f"{phase.mode:>9}: bound {phase.bound}/{phase.total}, makespan {phase.makespan:.1f} s; the reconciler "
              f"created {phase.created} pods in {phase.creating_seconds:.1f} s = {phase.created_per_second:.0f} "
              f"pods/s; CPU ms per bound pod: {cpu}")  # fmt: skip
    by_mode = {phase.mode: phase for phase in phases}
    through, plain = by_mode.get("extender"), by_mode.get("alone")
    if through and plain and plain.makespan:
        print(f"makespan through the extender / alone: {through.makespan / plain.makespan:.2f}×")
    for phase in phases:
        for process, threads in phase.by_thread.items():
            pods = max(phase.bound, 1)
            parts = [(name, 1000 * seconds / pods) for name, seconds in threads.items() if seconds > 0]
            print(f"{process} CPU ms per bound pod by thread ({phase.mode}): "
                  + ", ".join(f"{name} {ms:.2f}" for name, ms in sorted(parts, key=lambda item: -item[1])))  # fmt: skip
    for phase in phases:
        if phase.extender_detail:
            print(f"extender CPU from the first PodCliqueSet to settled ({phase.mode}), perf's by shared object and "
                  f"cProfile's main thread by function:\n{phase.extender_detail}")  # fmt: skip
    for phase in phases:
        if phase.extender_counters:
            found = phase.extender_counters.items()
            print(f"extender counters per bound pod ({phase.mode}): "
                  + ", ".join(f"{short(series)} {value:.3f}" for series, value in found))  # fmt: skip
    for phase in phases:
        top = list(phase.api_counters.items())[:16]
        total = sum(phase.api_counters.values())
        print(f"API requests per PodCliqueSet ({phase.mode}, every client, {total:.1f} in all): "
              + ", ".join(f"{short(series)} {value:.2f}" for series, value in top))  # fmt: skip


def api_server_profile(folder: Path) -> str:
    """The top of kube-apiserver's profile through the extender, or why there is none."""
    path = folder / "apiserver-extender.pb.gz"
    if not path.exists():
        return "no kube-apiserver profile"
    return f"kube-apiserver's CPU over the flow's first {PROFILE_SECONDS:g} s ({path}):\n" + pprof.summary(
        pprof.parse(path.read_bytes()), top=25
    )


def run_grove_flow(plane: ControlPlane, args: argparse.Namespace, folder: Path) -> list[FlowPhase]:
    phases = []
    if args.only != "alone":
        phases.append(run_phase(plane, args, folder, through_extender=True))
    if args.only != "extender":
        phases.append(run_phase(plane, args, folder, through_extender=False))
    return phases
