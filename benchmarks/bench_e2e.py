"""End to end: kube-scheduler's throughput with the extender in its loop, against the same scheduler alone.

Each phase starts a fake API server process holding the same generated cluster (``benchmarks.e2e.apiserver``:
1,008 GB200-like nodes × 4 GPUs, 375 PodGangs of 8 one-GPU pods, pods of other schedulers running and churning,
Node heartbeats, a kubelet) and runs the kube-scheduler stand-in (``benchmarks.sim.kubescheduler.standin``) over it:

1. **alone**: the stand-in filters, scores and POSTs ``pods/binding`` itself;
2. **extender**: ``grove-extender serve --kubeconfig`` watches the fake API server, plans ahead, and the
   stand-in calls its ``filter`` (every feasible node name) and ``bind`` as kube-scheduler does.

Prints pods bound per second in each phase, their ratio, and the extender's CPU per bound pod read from the serve
process's own CPU times over the drive (watch, filter, bind, status, all of it), with its idle cost per second
(heartbeats and churn only) beside it.

What it is for: the extender's own CPU per pod on its code paths, and regressions in them, on a cluster with churn,
heartbeats and other schedulers' pods, without a Kubernetes binary. It does **not** predict the ratio users see
(issue 18 asked for it within 15%; it is not): it reported 0.63-0.72× where ``--real`` measured 0.34-0.50× on the same
tree. The stand-in is cheaper than kube-scheduler (a resource-fit filter over the nodes, where kube-scheduler runs
its whole filter chain over all 1,008 nodes because the ``grove`` profile sets ``percentageOfNodesToScore: 100``,
and marshals the Pod and 1,008 names per filter), calls over plain HTTP on one kept-alive connection (no TLS), and
the fake API server is Python, whose CPU per pod differs from kube-apiserver's and etcd's. For the ratio, run
``--real``.

    .venv/bin/python -m benchmarks.bench_e2e [--nodes 1008] [--gangs 375] [--profile DIR]

``--profile DIR`` samples the serve process with py-spy during the drive (``pip install -e '.[bench]'``) and
prints where its CPU went.

``--real`` runs the same comparison on a real kube-apiserver and kube-scheduler v1.36 from ``KUBEBUILDER_ASSETS``
instead of the fake API server and the stand-in (``benchmarks.e2e.real``):

    KUBEBUILDER_ASSETS=/path/to/k8s .venv/bin/python -m benchmarks.bench_e2e --real
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from rich.progress import Progress

from benchmarks.e2e.loopback import Connection
from benchmarks.e2e.processes import Sampler, by_thread, cpu_seconds, free_port, rss_bytes, thread_cpu, thread_names
from benchmarks.e2e.real import add_arguments, run_real
from benchmarks.sim.kubescheduler.standin import StandIn, StandInOutcome

_SERVE = "import sys; from scheduler.cli import main; sys.exit(main(sys.argv[1:]))"


@dataclass
class Phase:
    mode: str
    outcome: StandInOutcome
    api_cpu: float
    api_stats: str
    extender_cpu: float = 0.0
    extender_idle_cpu_per_second: float = 0.0
    extender_rss: int = 0
    planning_seconds: float = 0.0
    by_thread: dict[str, float] = field(default_factory=dict)  # CPU seconds over the drive, by thread name


@contextmanager
def api_server(args: argparse.Namespace) -> Iterator[tuple[subprocess.Popen[str], str, list[str]]]:
    command = [sys.executable, "-m", "benchmarks.e2e.apiserver", "--nodes", str(args.nodes), "--gangs", str(args.gangs),
               "--pods-per-gang", str(args.pods_per_gang), "--other-pods-per-node", str(args.other_pods_per_node),
               "--heartbeat-seconds", str(args.heartbeat_seconds), "--churn", str(args.churn)]  # fmt: skip
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    stats: list[str] = []
    try:
        line = process.stdout.readline()
        if not line.startswith("url="):
            raise SystemExit(f"bench: the fake API server did not start ({line!r})")
        yield process, line.strip().removeprefix("url="), stats
    finally:
        process.stdin.close()
        stats.extend(process.stdout.read().split())
        process.wait(timeout=60)


async def _get_json(host: str, port: int, path: str) -> Any:
    connection = await Connection.open(host, port)
    try:
        status, payload = await connection.request("GET", path)
    finally:
        connection.close()
    if status != 200:
        raise SystemExit(f"bench: GET {path} answered {status}")
    return json.loads(payload)


async def _drive(api: tuple[str, int], extender: tuple[str, int] | None, deadline: float) -> StandInOutcome:
    nodes = (await _get_json(*api, "/api/v1/nodes"))["items"]
    listed = await _get_json(*api, "/api/v1/pods")
    standin = StandIn(
        nodes=nodes,
        pods=listed["items"],
        api=api,
        extender=extender,
        deadline_seconds=deadline,
        resource_version=listed["metadata"]["resourceVersion"],
    )
    with Progress(transient=True) as progress:
        task = progress.add_task("alone" if extender is None else "through the extender", total=standin.outcome.total)
        standin.on_bound = lambda: progress.advance(task)
        return await standin.run()


def _host_port(url: str) -> tuple[str, int]:
    parsed = urlparse(url)
    return parsed.hostname or "127.0.0.1", parsed.port or 80


def run_alone(args: argparse.Namespace) -> Phase:
    with api_server(args) as (process, url, stats):
        started = cpu_seconds(process.pid)
        outcome = asyncio.run(_drive(_host_port(url), None, args.deadline))
        api_cpu = cpu_seconds(process.pid) - started
    return Phase("alone", outcome, api_cpu, " ".join(stats))


@contextmanager
def serving(url: str) -> Iterator[tuple[subprocess.Popen[bytes], int, int]]:
    """``grove-extender serve --kubeconfig`` against the fake API server at ``url``, on free ports: the verbs' and the
    debug port's (``/debug/gangs``, ``/metrics``)."""
    with tempfile.TemporaryDirectory() as folder:
        kubeconfig = Path(folder) / "kubeconfig"
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": url}}],
            "users": [{"name": "fake", "user": {"token": "bench"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        }))  # fmt: skip
        port, debug_port = free_port(), free_port()
        command = [sys.executable, "-c", _SERVE, "serve", "--kubeconfig", str(kubeconfig), "--port", str(port),
                   "--debug-port", str(debug_port), "--lease-namespace", "default",
                   "--log-level", "warning"]  # fmt: skip
        serve = subprocess.Popen(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            yield serve, port, debug_port
        finally:
            serve.terminate()
            serve.wait(timeout=30)


def run_extender(args: argparse.Namespace) -> Phase:
    with api_server(args) as (process, url, stats), serving(url) as (serve, port, debug_port):
        planning = _wait_planned(("127.0.0.1", port), debug_port, args.gangs, serve=serve, deadline=600)
        idle_from = cpu_seconds(serve.pid)
        time.sleep(args.idle_seconds)
        idle = (cpu_seconds(serve.pid) - idle_from) / args.idle_seconds
        sampler = Sampler.start(serve.pid, Path(args.profile) / "extender.txt") if args.profile else None
        api_from, serve_from = cpu_seconds(process.pid), cpu_seconds(serve.pid)
        threads_from = thread_cpu(serve.pid)
        outcome = asyncio.run(_drive(_host_port(url), ("127.0.0.1", port), args.deadline))
        time.sleep(args.settle_seconds)  # status writes and Events follow the last bind
        extender_cpu = cpu_seconds(serve.pid) - serve_from - idle * args.settle_seconds
        api_cpu = cpu_seconds(process.pid) - api_from
        threads = by_thread(threads_from, thread_cpu(serve.pid), thread_names(serve.pid))
        rss = rss_bytes(serve.pid)
        if sampler is not None:
            sampler.stop()
    return Phase("extender", outcome, api_cpu, " ".join(stats), extender_cpu, idle, rss, planning, threads)


def run_memory(args: argparse.Namespace) -> int:
    """RSS of serve holding the cluster, after its first sync and after ``--memory`` seconds of streaming."""
    with api_server(args) as (_, url, stats), serving(url) as (serve, port, debug_port):
        synced = _wait_planned(("127.0.0.1", port), debug_port, 0, serve=serve, deadline=1800)
        at_sync = rss_bytes(serve.pid)
        time.sleep(args.memory)
        after, peak = rss_bytes(serve.pid), rss_bytes(serve.pid, field="VmHWM")
    pods = args.nodes * args.other_pods_per_node + args.gangs * args.pods_per_gang
    print(f"cluster: {args.nodes} nodes, {pods} pods; load average before: {args.load_before}")
    print(f"serve synced in {synced:.0f} s; RSS at sync {at_sync / 2**20:.0f} MiB, after {args.memory:g} s of "
          f"watch events {after / 2**20:.0f} MiB, peak {peak / 2**20:.0f} MiB (target ≤ 1024 MiB)")  # fmt: skip
    print(f"fake API events: {' '.join(stats)}")
    return 0


def _wait_planned(
    extender: tuple[str, int], debug_port: int, gangs: int, *, serve: subprocess.Popen[bytes], deadline: float
) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < deadline:
        if serve.poll() is not None:
            raise SystemExit(f"bench: serve exited with {serve.returncode}")
        try:
            states = [g["state"] for g in asyncio.run(_get_json(extender[0], debug_port, "/debug/gangs"))["gangs"]]
            ready = asyncio.run(_ready(extender))
        except (OSError, SystemExit):
            states, ready = [], False
        if ready and sum(1 for s in states if s in ("Planned", "Infeasible")) >= gangs:
            return time.perf_counter() - started
        time.sleep(0.5)
    raise SystemExit(f"bench: gangs not planned within {deadline:g}s")


async def _ready(extender: tuple[str, int]) -> bool:
    connection = await Connection.open(*extender)
    try:
        status, _ = await connection.request("GET", "/readyz")
    finally:
        connection.close()
    return status == 200


def report(alone: Phase, through: Phase, args: argparse.Namespace) -> None:
    a, e = alone.outcome, through.outcome
    print(f"cluster: {args.nodes} nodes × 4 GPUs, {args.gangs} PodGangs × {args.pods_per_gang} pods of 1 GPU; "
          f"{args.other_pods_per_node} other pods per node, churn {args.churn:g}/s, Node heartbeat every "
          f"{args.heartbeat_seconds:g} s; load average before: {args.load_before}")  # fmt: skip
    for phase in (alone, through):
        o = phase.outcome
        print(f"{phase.mode:>9}: bound {o.bound}/{o.total} in {o.elapsed:.2f} s = {o.pods_per_second:.1f} pods/s; "
              f"bind errors {o.bind_errors}, filtered out {o.filtered_out}, cycles {o.cycles}; "
              f"stand-in CPU {1000 * o.cpu_seconds / max(o.bound, 1):.2f} ms/pod, "
              f"fake API CPU {1000 * phase.api_cpu / max(o.bound, 1):.2f} ms/pod")  # fmt: skip
        if o.first_errors:
            print(f"           first retries: {o.first_errors[0]}")
    ratio = e.pods_per_second / a.pods_per_second if a.pods_per_second else float("nan")
    per_pod = 1000 * through.extender_cpu / max(e.bound, 1)
    print(f"ratio through the extender / alone: {ratio:.2f}× (target ≥ 0.67×)")
    print(
        f"extender CPU per bound pod: {per_pod:.2f} ms (target ≤ 1.5 ms), idle {1000 * through.extender_idle_cpu_per_second:.0f} ms/s; "  # noqa: E501
        f"planned ahead in {through.planning_seconds:.1f} s; RSS {through.extender_rss / 2**20:.0f} MiB"
    )
    if through.by_thread:
        parts = sorted(through.by_thread.items(), key=lambda item: -item[1])
        listed = ", ".join(f"{name} {1000 * seconds / max(e.bound, 1):.2f}" for name, seconds in parts if seconds > 0)
        print(f"extender CPU by thread, ms per bound pod (idle included): {listed}")
    print(f"fake API events: alone {alone.api_stats}; extender {through.api_stats}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1008)
    parser.add_argument("--gangs", type=int, default=375)
    parser.add_argument("--pods-per-gang", type=int, default=8)
    parser.add_argument("--other-pods-per-node", type=int, default=4)
    parser.add_argument("--heartbeat-seconds", type=float, default=10.0)
    parser.add_argument("--churn", type=float, default=20.0, help="other schedulers' pods per second")
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=6.0,
        help="seconds counted after the last bind (less the idle cost) for the PodGang status writes and Events that "
        "follow it: at 2 s a fast run left a third of them uncounted",
    )
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds per phase")
    parser.add_argument("--only", choices=["alone", "extender"], help="run one phase")
    parser.add_argument("--profile", help="folder for a py-spy profile of the extender during the drive")
    parser.add_argument(
        "--perf",
        help="with --real: folder for perf's record of the extender during the drive or the flow (CPU by shared "
        "object)",
    )
    parser.add_argument(
        "--cprofile",
        help="with --real: folder for a cProfile of the extender's main thread during the drive or the flow (CPU by "
        "function)",
    )
    parser.add_argument(
        "--memory", type=float, metavar="SECONDS", help="no drive: serve's RSS after sync and SECONDS of streaming"
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    if args.real:
        return run_real(args)
    args.load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    if args.memory is not None:
        return run_memory(args)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    alone = run_alone(args) if args.only != "extender" else None
    through = run_extender(args) if args.only != "alone" else None
    if alone and through:
        report(alone, through, args)
    else:
        for phase in (alone, through):
            if phase is not None:
                o = phase.outcome
                print(f"{phase.mode}: {o.bound}/{o.total} bound, {o.pods_per_second:.1f} pods/s, "
                      f"extender CPU {1000 * phase.extender_cpu / max(o.bound, 1):.2f} ms/pod")  # fmt: skip
                for name, seconds in sorted(phase.by_thread.items(), key=lambda item: -item[1]):
                    print(f"  {name}: {1000 * seconds / max(o.bound, 1):.2f} ms/pod")
    return 0


if __name__ == "__main__":
    sys.exit(main())
