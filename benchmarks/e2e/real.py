"""``bench_e2e --real``: the same-run throughput benchmark on a real kube-apiserver and kube-scheduler
(``benchmarks.controlplane``), from ``KUBEBUILDER_ASSETS``.

One control plane (etcd, kube-apiserver, the ``standalone`` overlay installed, 1,008 fake GB200-like nodes × 4
GPUs), two phases on it, the pods and PodGangs created first and kube-scheduler started after, client QPS 500 for
both:

1. **through the extender**: ``grove-extender serve`` as the shipped Deployment runs it (mTLS, its ServiceAccount),
   planned ahead, then kube-scheduler with the shipped ``grove`` profile;
2. **alone**: the extender stopped, the same pods created again for the default profile, kube-scheduler with the
   default configuration (what the cluster runs without grove-extender).

The extender nominates each planned pod to its planned node (``--no-nominate`` runs it without, for the
comparison) and the drive starts once every nomination is written. With ``--live`` kube-scheduler (and the
extender) run first and the pods are created after, both phases timed from the first create: nothing is planned or
nominated ahead, so all the extender's planning is in its CPU per pod (without ``--live`` it is printed apart, from
the queue's first create to the drive). Either way the extender is started and ready before the queue exists, as a
cluster's is; its start (imports, listing the cluster) is printed apart too.

``--http-servers builtin,hypercorn`` runs one phase through the extender for each of ``serve --http-server``'s
choices, fresh pods and PodGangs each, beside kube-scheduler alone (ARCHITECTURE.md, "Why the HTTP/2 server is our
own").

The gangs carry no topology constraint unless ``--required-pack`` (each gang in one ``nvidia.com/gpu.clique``: 18
nodes × 4 GPUs, so every plan must keep its 8 pods in one domain); the issue's two set-ups:

    KUBEBUILDER_ASSETS=/path/to/k8s .venv/bin/python -m benchmarks.bench_e2e --real
    KUBEBUILDER_ASSETS=/path/to/k8s .venv/bin/python -m benchmarks.bench_e2e --real --required-pack

Prints pods bound per second in each (from kube-scheduler ready to the last bind), their ratio, the extender's CPU
per bound pod from ``/proc`` of the serve process (drive + 6 s of status writes, less its idle rate), the API
server's, etcd's and kube-scheduler's CPU per bound pod beside it, the extender's CPU by thread, and counters per
bound pod: the extender's own (``/metrics`` on its debug port: verbs, binds, plans …) and the API server's
(requests by verb and resource, watch events by kind). A counter the extender adds shows up on its own. One line
names what each bound pod cost: filter (by answer), prioritize and bind calls, TLS handshakes, API writes, watch
events the extender decoded, plans and queue-head models. kube-scheduler's CPU is split by activity (in-tree filters,
extender calls, TLS handshakes, GC …) from a CPU profile of its first ``PROFILE_SECONDS`` in each phase, read from
its own pprof endpoint (``benchmarks.e2e.pprof``); ``--profile DIR`` keeps those profiles and adds py-spy ones of
the extender (``extender-ahead.txt`` from the first create until planned and nominated ahead, ``extender-real.txt`` over
the drive; ``python -m benchmarks.e2e.profile FILE`` sums either). Without ``--live``, one line says what planning
ahead took: queue heads planned, the CP-SAT models they needed, the gangs' plans and the CPU by thread.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from rich.progress import Progress

from benchmarks.controlplane.assets import find_assets
from benchmarks.controlplane.binds import BindTimes
from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.nodes import CLIQUE, gpu_nodes
from benchmarks.controlplane.supervisor import Child
from benchmarks.controlplane.workload import Gang
from benchmarks.e2e import cprofile, pprof
from benchmarks.e2e.big_gang import run_big_gang
from benchmarks.e2e.counters import api_counters, by_label, extender_counters, per_pod
from benchmarks.e2e.grove_flow import api_server_profile, flow_report, run_grove_flow
from benchmarks.e2e.mix import USED, Mix, mix_workload
from benchmarks.e2e.perf import PerfRecord
from benchmarks.e2e.perf import summary as perf_summary
from benchmarks.e2e.phase import NAMESPACE, PROFILE_SECONDS, QPS, Phase, Queue, Uniform
from benchmarks.e2e.processes import (
    Sampler,
    by_thread,
    cpu_seconds,
    io_calls,
    thread_cpu,
    thread_names,
    thread_writes,
)
from benchmarks.e2e.real_report import report

__all__ = ["add_arguments", "run_real"]

HTTP_SERVERS = ("builtin", "hypercorn")  # serve --http-server


def add_arguments(parser: argparse.ArgumentParser) -> None:
    real = parser.add_argument_group("on a real control plane (--real)")
    real.add_argument("--real", action="store_true", help="kube-apiserver and kube-scheduler from KUBEBUILDER_ASSETS")
    real.add_argument("--logs", help="keep the control plane's folder (every component's log) here")
    real.add_argument(
        "--no-nominate",
        action="store_true",
        help="run the extender with --no-nominate (no pod's nominatedNodeName written; kube-scheduler then runs "
        "its filters over every node for every pod): the comparison for the nominations",
    )
    real.add_argument(
        "--live",
        action="store_true",
        help="kube-scheduler (and the extender) running first, the pods created after, both phases timed from the "
        "first create to the last bind: nothing planned or nominated ahead, all of the extender's CPU counted",
    )
    real.add_argument(
        "--http-servers",
        default="builtin",
        help="comma-separated serve --http-server choices (builtin, hypercorn): one phase through the extender for "
        "each, side by side in the run (default: %(default)s)",
    )
    real.add_argument(
        "--grove-flow",
        action="store_true",
        help="Grove's whole flow: PodCliqueSets created, the reconciler making their gated pods and PodGangs, "
        "through the extender and to kube-scheduler alone (benchmarks.e2e.grove_flow)",
    )
    real.add_argument(
        "--rate", type=float, default=0.0, help="with --grove-flow: PodCliqueSets created per second (0: all at once)"
    )
    real.add_argument(
        "--reconcile-flags",
        default="",
        help="with --grove-flow: flags added to grove-extender reconcile, e.g. '--workers 8 --qps 500 --burst 500'",
    )
    real.add_argument(
        "--mix",
        action="store_true",
        help="users' queue instead of uniform gangs (benchmarks.e2e.mix): gangs of 1-64 pods in 1-4 groups with "
        "required and preferred packs, on a cluster 60%% used by another scheduler's pods",
    )
    real.add_argument("--seed", type=int, default=1, help="with --mix: the cluster's and the queue's draws")
    real.add_argument(
        "--big-gang",
        type=int,
        default=0,
        help="one gang of this many one-GPU pods, created before its PodGang, timed from the PodGang to the gang "
        "whole (benchmarks.e2e.big_gang; issue 29: 10000 on --nodes 2520)",
    )
    real.add_argument(
        "--big-gang-wait", type=float, default=10.0, help="with --big-gang: seconds the pods wait without a PodGang"
    )
    real.add_argument(
        "--timeline", type=float, default=5.0, help="with --big-gang: seconds per line of the timeline printed after"
    )
    real.add_argument(
        "--extender-log-level",
        default="warning",
        help="serve --log-level during the run (its log is kept with --logs; default: %(default)s, which costs "
        "nothing on the figures)",
    )
    real.add_argument(
        "--required-pack",
        action="store_true",
        help="every gang needs one NVLink domain (nvidia.com/gpu.clique, required pack); default: no topology "
        "constraint, gangs of 8 placed anywhere",
    )


def _processes(plane: ControlPlane, scheduler: Child | None) -> dict[str, int]:
    found = {"kube-apiserver": plane.server.process.pid, "etcd": plane.server.etcd.pid}
    if scheduler is not None:
        found["kube-scheduler"] = scheduler.pid
    if plane.extender is not None and plane.extender.child.alive():
        found["extender"] = plane.extender.child.pid
    return found


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def _scheduler_profile(plane: ControlPlane, scheduler: Child, output: Path, seconds: float) -> threading.Thread:
    """A CPU profile of kube-scheduler from its pprof endpoint, over the first ``seconds`` of the drive."""
    argv = scheduler.process.args
    port = next(a.split("=", 1)[1] for a in map(str, argv if isinstance(argv, list) else []) if "--secure-port=" in a)

    def run() -> None:
        try:
            data = pprof.fetch(f"https://127.0.0.1:{port}", token=plane.server.admin_token, seconds=seconds)
            output.write_bytes(data)
        except OSError as err:
            print(f"bench --real: no kube-scheduler profile: {err}")

    thread = threading.Thread(target=run, name="pprof", daemon=True)
    thread.start()
    return thread


STALL_SECONDS = 20.0
"""With ``--mix``, a phase ends once nothing more was bound for this long: some gangs cannot bind."""
PLANNED_STALL_SECONDS = 3.0
"""With ``--mix``, planning ahead is over once no gang's state and no nomination changed for this long."""


def _drive(
    plane: ControlPlane,
    *,
    pods: int,
    start: Callable[[], Child],
    deadline: float,
    label: str,
    profile: Path,
    create: Callable[[], None] | None = None,
    stall: float | None = None,
) -> tuple[Child, float, float, BindTimes]:
    """Start kube-scheduler and wait until ``pods`` are bound; (scheduler, ready at, last bind at, watch).
    ``profile``: where to write kube-scheduler's CPU profile of the drive's first ``PROFILE_SECONDS``.
    ``create``: the pods are created only once kube-scheduler is up, and the drive is timed from then (``--live``).
    ``stall``: stop once nothing more was bound for that long (a queue some of which cannot bind)."""
    watch = BindTimes(plane.api, NAMESPACE)
    scheduler = start()
    ready = time.monotonic()
    profiling = _scheduler_profile(plane, scheduler, profile, PROFILE_SECONDS)
    if create is not None:
        create()
    with Progress(transient=True) as progress:
        task = progress.add_task(label, total=pods)
        seen, changed = 0, time.monotonic()
        while watch.count() < pods and time.monotonic() - ready < deadline:
            if watch.count() != seen:
                seen, changed = watch.count(), time.monotonic()
            elif stall is not None and seen and time.monotonic() - changed > stall:
                break
            progress.update(task, completed=watch.count())
            time.sleep(0.5)
    watch.stop()
    profiling.join(timeout=90)
    times = watch.first_bound().values()
    return scheduler, ready, max(times, default=ready), watch


def _activity(profile: Path) -> dict[str, float]:
    return pprof.by_activity(pprof.parse(profile.read_bytes())) if profile.exists() else {}


def _wait_planned(plane: ControlPlane, gangs: int, *, deadline: float = 900.0, stall: float | None = None) -> float:
    """Until every gang is planned (or refused), read from the gangs-by-state gauge: ``/debug/gangs`` describes
    every gang, and polling it would charge its own CPU to planning ahead. With ``stall``: or until the states
    have not changed for that long (gangs left waiting: deferred behind others, or room not made for them)."""
    started = time.monotonic()
    assert plane.extender is not None
    last, changed = {}, started
    while time.monotonic() - started < deadline:
        states = by_label(plane.extender.metrics(), "grove_extender_gangs", "state")
        if states.get("Planned", 0) + states.get("Infeasible", 0) >= gangs:
            return time.monotonic() - started
        if states != last:
            last, changed = states, time.monotonic()
        elif stall is not None and time.monotonic() - changed > stall:
            return changed - started
        time.sleep(0.5)
    raise SystemExit(f"bench --real: gangs not planned within {deadline:g} s")


def _wait_nominated(plane: ControlPlane, pods: int, *, deadline: float = 120.0, stall: float | None = None) -> float:
    """Until the extender has answered a nomination for every pod (they are written after their plans, apart from
    them), or with ``stall`` none for that long (pods of gangs not planned are not nominated); the seconds it
    took."""
    started = time.monotonic()
    last, changed = -1.0, started
    while time.monotonic() - started < deadline:
        written = sum(v for k, v in extender_counters(plane).items() if k.startswith("grove_extender_nominations"))
        if written >= pods:
            return time.monotonic() - started
        if written != last:
            last, changed = written, time.monotonic()
        elif stall is not None and time.monotonic() - changed > stall:
            return changed - started
        time.sleep(0.25)
    raise SystemExit(f"bench --real: nominations not written within {deadline:g} s")


def through_extender(
    plane: ControlPlane, queue: Queue, args: argparse.Namespace, folder: Path, *, server: str = "builtin"
) -> Phase:
    """One phase through the extender, its verbs served by ``server`` (``serve --http-server``)."""
    total = queue.size
    phase = Phase("extender" if server == "builtin" else f"extender/{server}", total=total)
    stall = STALL_SECONDS if args.mix else None
    flags = (f"--log-level={args.extender_log_level}", f"--http-server={server}",
             *(("--no-nominate",) if args.no_nominate else ()))  # fmt: skip
    # Started and ready before any pod or PodGang of the queue exists, as a cluster's extender is: its imports and
    # the listing of the nodes are paid once per process, not per pod, and are printed apart.
    suffix = "" if server == "builtin" else f"-{server}"
    profiled = Path(args.cprofile) / f"extender-main{suffix}.prof" if args.cprofile else None
    with cprofile.environment(profiled) if profiled else contextlib.nullcontext():
        plane.start_extender(extra=flags)
    assert plane.extender is not None
    serve = plane.extender.child.pid
    phase.startup_cpu = cpu_seconds(serve)
    started_threads = thread_cpu(serve)
    ahead = (
        Sampler.start(serve, Path(args.profile) / f"extender-ahead{suffix}.txt")
        if args.profile and not args.live
        else None
    )
    if not args.live:
        queue.create_queue(plane.api, NAMESPACE, scheduler="grove")
        # Short stalls: a reservation's time to live runs from its plan, and kube-scheduler is not started yet.
        settled = PLANNED_STALL_SECONDS if args.mix else None
        phase.planning_seconds = _wait_planned(plane, len(queue.guaranteed()), stall=settled)
        if not args.no_nominate:
            phase.planning_seconds += _wait_nominated(plane, total, stall=settled)
    phase.planning_cpu = cpu_seconds(serve) - phase.startup_cpu  # from the first create: planning, nominating
    live = thread_cpu(serve)
    phase.planning_counters = extender_counters(plane)
    if ahead is not None:
        ahead.stop()  # before the names: py-spy cannot dump a process another py-spy is sampling
    phase.planning_by_thread = by_thread(started_threads, live, thread_names(serve))
    phase.planning_by_thread["threads ended (CP-SAT workers …)"] = phase.planning_cpu - sum(
        phase.planning_by_thread.values()
    )
    idle_from = cpu_seconds(serve)
    time.sleep(args.idle_seconds)
    phase.extender_idle = (cpu_seconds(serve) - idle_from) / args.idle_seconds
    api_before, extender_before = api_counters(plane), extender_counters(plane)
    sampler = Sampler.start(serve, Path(args.profile) / f"extender-real{suffix}.txt") if args.profile else None
    recorder = PerfRecord.start(serve, Path(args.perf) / f"extender-drive{suffix}.perf.data") if args.perf else None
    if profiled:
        cprofile.start(serve)
    threads_before = thread_cpu(serve)
    io_before, writes_before = io_calls(serve), thread_writes(serve)
    cpu_before = _cpu(_processes(plane, None))
    scheduler_cpu: float
    scheduler, ready, last, watch = _drive(
        plane, pods=total, start=lambda: plane.start_scheduler(overrides=QPS), deadline=args.deadline,
        label=f"through the extender ({server})", profile=folder / f"scheduler-extender{suffix}.pb.gz",
        create=(lambda: queue.create_queue(plane.api, NAMESPACE, scheduler="grove")) if args.live else None,
        stall=stall,
    )  # fmt: skip
    phase.scheduler_activity = _activity(folder / f"scheduler-extender{suffix}.pb.gz")
    scheduler_cpu = cpu_seconds(scheduler.pid)
    cpu_at_last = _cpu(_processes(plane, None))
    time.sleep(args.settle_seconds)  # the PodGang status writes and Events that follow the last bind
    extender_cpu = cpu_seconds(serve) - cpu_before["extender"] - phase.extender_idle * args.settle_seconds
    names = thread_names(serve)
    phase.by_thread = by_thread(threads_before, thread_cpu(serve), names)
    io_after = io_calls(serve)
    phase.writes_by_thread = by_thread(writes_before, thread_writes(serve), names)
    phase.extender_io = (io_after[0] - io_before[0], io_after[1] - io_before[1])
    if sampler is not None:
        sampler.stop()
    if recorder is not None:
        recorder.stop()
        phase.perf = perf_summary(recorder.output, names)
    if profiled and cprofile.stop(serve, profiled):
        phase.perf = "\n".join(part for part in (phase.perf, cprofile.summary(profiled, watch.count())) if part)
    phase.bound, phase.seconds = watch.count(), last - ready
    phase.cpu = {name: cpu_at_last[name] - cpu_before[name] for name in ("kube-apiserver", "etcd")}
    phase.cpu.update({"extender": extender_cpu, "kube-scheduler": scheduler_cpu})
    phase.api_counters = per_pod(api_before, api_counters(plane), phase.bound, at_least=0.01)
    phase.final_counters = extender_counters(plane, sums=True)
    phase.extender_counters = per_pod(extender_before, extender_counters(plane), phase.bound, at_least=0.001)
    phase.whole = _whole(queue, watch)
    scheduler.stop()
    plane.extender.child.stop(kill=True)
    return phase


def _clear_pods(plane: ControlPlane) -> None:
    """The former phase's pods deleted, so the next finds every GPU free."""
    plane.api.delete(f"/api/v1/namespaces/{NAMESPACE}/pods", gracePeriodSeconds=0)
    while plane.api.items(f"/api/v1/namespaces/{NAMESPACE}/pods", limit=1):
        time.sleep(0.5)


def alone(plane: ControlPlane, queue: Queue, args: argparse.Namespace, folder: Path) -> Phase:
    total = queue.size
    phase = Phase("alone", total=total)
    _clear_pods(plane)

    def create() -> None:
        # The PodGangs are still there; nothing reads them.
        queue.create_queue(plane.api, NAMESPACE, scheduler="default-scheduler", podgangs=False)

    if not args.live:
        create()
    api_before = api_counters(plane)
    cpu_before = _cpu(_processes(plane, None))
    scheduler, ready, last, watch = _drive(
        plane, pods=total, start=lambda: plane.start_plain_scheduler(overrides=QPS), deadline=args.deadline,
        label="alone", profile=folder / "scheduler-alone.pb.gz", create=create if args.live else None,
        stall=STALL_SECONDS if args.mix else None,
    )  # fmt: skip
    phase.scheduler_activity = _activity(folder / "scheduler-alone.pb.gz")
    cpu_at_last = _cpu(_processes(plane, scheduler))
    phase.bound, phase.seconds = watch.count(), last - ready
    phase.cpu = {name: cpu_at_last[name] - cpu_before.get(name, 0.0) for name in cpu_at_last}
    phase.api_counters = per_pod(api_before, api_counters(plane), phase.bound, at_least=0.01)
    phase.whole = _whole(queue, watch)
    scheduler.stop()
    return phase


def _whole(queue: Queue, watch: BindTimes) -> int:
    bound = set(watch.first_bound())
    groups = queue.guaranteed().values()
    return sum(1 for gang in groups if all(len(pods & bound) >= minimum for pods, minimum in gang))


@contextmanager
def _folder(args: argparse.Namespace) -> Iterator[Path]:
    if args.logs:
        Path(args.logs).mkdir(parents=True, exist_ok=True)
        yield Path(args.logs)
        return
    with tempfile.TemporaryDirectory(prefix="bench-real-") as folder:
        yield Path(folder)


def run_real(args: argparse.Namespace) -> int:
    assets = find_assets()
    if isinstance(assets, str):
        raise SystemExit(f"bench --real: {assets}")
    required = CLIQUE if args.required_pack else None
    servers = [name for name in args.http_servers.split(",") if name]
    unknown = sorted(set(servers) - set(HTTP_SERVERS))
    if unknown or not servers:
        raise SystemExit(f"bench --real: --http-servers {args.http_servers!r}: choose from {', '.join(HTTP_SERVERS)}")
    if args.mix and (servers != ["builtin"] or args.grove_flow):
        raise SystemExit("bench --real: --mix runs one phase through the built-in server, without --grove-flow")
    gangs = [Gang(f"gang-{g:05d}", args.pods_per_gang, required=required) for g in range(args.gangs)]
    queue: Queue = Uniform(gangs)
    if args.mix:
        queue = mix_workload(gpu_nodes(args.nodes), seed=args.seed, namespace=NAMESPACE)
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    started = time.monotonic()
    with (
        _folder(args) as folder,
        ControlPlane.start(assets, folder, nodes=gpu_nodes(args.nodes), components=False, agents=False) as plane,
    ):
        plane.ensure_namespace(NAMESPACE)
        if isinstance(queue, Mix):
            plane.ensure_namespace(USED)
            queue.create_used(plane.api)
        print(f"control plane up in {time.monotonic() - started:.0f} s ({folder})")
        if args.big_gang:
            load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            run_big_gang(plane, args, load=f"{load_before} at the start, {load} once the cluster was up")
            return 0
        if args.grove_flow:
            flow = run_grove_flow(plane, args, Path(args.profile or folder))
            profile_summary = api_server_profile(Path(args.profile or folder))
        phases = []
        if args.only != "alone" and not args.grove_flow:
            for index, server in enumerate(servers):
                if index:  # gangs of their own: the former PodGangs keep the status the last phase wrote
                    _clear_pods(plane)
                named = Uniform([replace(g, name=f"{server}-{g.name}") for g in gangs]) if index else queue
                phases.append(through_extender(plane, named, args, Path(args.profile or folder), server=server))
        if args.only != "extender" and not args.grove_flow:
            phases.append(alone(plane, queue, args, Path(args.profile or folder)))
    load_after = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    if args.grove_flow:
        flow_report(flow, args, load=f"{load_before} before, {load_after} after")
        print(profile_summary)
        return 0
    report(phases, args, load=f"{load_before} before, {load_after} after", queue=queue)
    return 0
