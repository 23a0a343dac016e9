"""``bench_e2e --real --big-gang N``: how long one gang of ``N`` one-GPU pods takes to bind whole once its PodGang
exists, its pods created beforehand (issue 29: 10,000 pods on 2,520 nodes).

The extender and kube-scheduler run first. The pods are created (ungated, labelled with their gang) while no
PodGang names them, so kube-scheduler pops them and the extender answers that their gang does not exist yet; then
the PodGang is created and the clock starts. Prints seconds from the PodGang's creation to the first and the last
binding, how the filter calls the pods met were answered, kube-scheduler's queue metrics (pending pods by queue, and
its attempts), the API server's requests per pod, and a timeline (``benchmarks.e2e.timeline``) of what each process
did meanwhile; with ``--profile DIR``, kube-scheduler's CPU profile over the first ``PROFILE_SECONDS``. On a 2-core
machine they show both cores full: kube-scheduler's scans of pods popped without their own nomination, and the
API server's writes (docs/bench_e2e.md, "A 10,000-pod gang, second by second").
"""

from __future__ import annotations

import argparse
import ssl
import threading
import time
import urllib.request
from pathlib import Path

from rich.progress import Progress

from benchmarks.controlplane.binds import BindTimes
from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.workload import Gang, create_gangs, podgang_manifest
from benchmarks.e2e import pprof
from benchmarks.e2e.counters import api_counters, by_label, counters, per_pod, short
from benchmarks.e2e.phase import NAMESPACE, QPS
from benchmarks.e2e.processes import thread_names
from benchmarks.e2e.timeline import Timeline

__all__ = ["run_big_gang"]

PROFILE_SECONDS = 20.0  # kube-scheduler's profile: the PodGang's first seconds, while nominations are written


def run_big_gang(plane: ControlPlane, args: argparse.Namespace, *, load: str) -> None:
    gang = Gang("big", args.big_gang)
    plane.start_extender(
        extra=(f"--log-level={args.extender_log_level}", *(("--no-nominate",) if args.no_nominate else ()))
    )
    assert plane.extender is not None
    scheduler = plane.start_scheduler(overrides=QPS)
    watch = BindTimes(plane.api, NAMESPACE)
    began = time.monotonic()
    create_gangs(plane.api, NAMESPACE, [gang], podgangs=False)
    created = time.monotonic()
    time.sleep(
        args.big_gang_wait
    )  # kube-scheduler meets the pods without their PodGang, as a late operator leaves them
    before = _filter_answers(plane)
    pending_before = _pending(plane)
    pids = {"extender": plane.extender.child.pid, "kube-scheduler": scheduler.pid,
            "kube-apiserver": plane.server.process.pid, "etcd": plane.server.etcd.pid}  # fmt: skip
    timeline = Timeline(bound=watch.count, metrics=plane.extender.metrics, pids=pids, extender_pid=pids["extender"])
    timeline.start()
    api_before = api_counters(plane)
    profiling = _profile_scheduler(plane, Path(args.profile)) if args.profile else None
    plane.api.call("POST", f"/apis/scheduler.grove.io/v1alpha1/namespaces/{NAMESPACE}/podgangs",
                   podgang_manifest(gang, NAMESPACE))  # fmt: skip
    gang_at = time.monotonic()
    with Progress(transient=True) as progress:
        task = progress.add_task("binding the gang", total=gang.size)
        while watch.count() < gang.size and time.monotonic() - gang_at < args.deadline:
            progress.update(task, completed=watch.count())
            time.sleep(0.5)
    timeline.stop()
    api = per_pod(api_before, api_counters(plane), gang.size, at_least=0.01)
    watch.stop()
    times = sorted(watch.first_bound().values())
    after = _filter_answers(plane)
    answers = ", ".join(f"{k} {after.get(k, 0) - before.get(k, 0):.0f}" for k in sorted(after))
    nominate = "not nominated (--no-nominate)" if args.no_nominate else "nominated to their planned nodes"
    print(f"real kube-apiserver + kube-scheduler v1.36: {args.nodes} nodes × 4 GPUs, one gang of {gang.size} one-GPU "
          f"pods, {nominate}, its pods created in {created - began:.1f} s and left {args.big_gang_wait:g} s without "
          f"their PodGang; load {load}")  # fmt: skip
    if len(times) < gang.size:
        print(f"bound {len(times)}/{gang.size} within {args.deadline:g} s of the PodGang's creation")
    else:
        print(f"whole {times[-1] - gang_at:.1f} s after its PodGang was created (first binding at "
              f"{times[0] - gang_at:.1f} s, the release took {times[-1] - times[0]:.1f} s)")  # fmt: skip
    nominations = by_label(plane.extender.metrics(), "grove_extender_filter_nominations_total", "nomination")
    print(f"kube-scheduler's pending pods when the PodGang was created, by queue: {pending_before}; filter answers "
          f"since: {answers}; filters by the pod's nomination: {nominations}")  # fmt: skip
    print(f"kube-scheduler's attempts by result over the run: {_attempts(plane)}")
    print("API server per pod of the gang, from its PodGang's creation: "
          + ", ".join(f"{short(series)} {value:.2f}" for series, value in list(api.items())[:14]))  # fmt: skip
    print(f"from the PodGang's creation, every {args.timeline:g} s (rates per second; CPU in cores):")
    for line in timeline.rows(since=gang_at, every=args.timeline, names=thread_names(pids["extender"])):
        print(" ", line)
    if profiling is not None:
        profiling.join(timeout=PROFILE_SECONDS + 30)
        path = Path(args.profile) / "scheduler-big-gang.pb.gz"
        if path.exists():
            print(f"kube-scheduler's CPU over the first {PROFILE_SECONDS:g} s after the PodGang ({path}):")
            print(pprof.summary(pprof.parse(path.read_bytes()), top=30))
    scheduler.stop()


def _profile_scheduler(plane: ControlPlane, folder: Path) -> threading.Thread:
    """kube-scheduler's CPU profile (its pprof endpoint) over the first ``PROFILE_SECONDS`` after the PodGang: what
    each pod it pops costs it while the nominations are being written."""
    folder.mkdir(parents=True, exist_ok=True)

    def run() -> None:
        try:
            data = pprof.fetch(_scheduler_url(plane), token=plane.server.admin_token, seconds=PROFILE_SECONDS)
            (folder / "scheduler-big-gang.pb.gz").write_bytes(data)
        except OSError as err:
            print(f"bench --big-gang: no kube-scheduler profile: {err}")

    thread = threading.Thread(target=run, name="pprof", daemon=True)
    thread.start()
    return thread


def _scheduler_url(plane: ControlPlane) -> str:
    assert plane.scheduler is not None
    argv = [str(a) for a in plane.scheduler.process.args] if isinstance(plane.scheduler.process.args, list) else []
    port = next(a.split("=", 1)[1] for a in argv if a.startswith("--secure-port="))
    return f"https://127.0.0.1:{port}"


def _filter_answers(plane: ControlPlane) -> dict[str, float]:
    assert plane.extender is not None
    return by_label(plane.extender.metrics(), "grove_extender_filter_answers_total", "answer")


def _scheduler_metrics(plane: ControlPlane) -> str:
    """kube-scheduler's ``/metrics`` on its secure port (self-signed: not verified), as the cluster's admin."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    request = urllib.request.Request(
        f"{_scheduler_url(plane)}/metrics", headers={"Authorization": f"Bearer {plane.server.admin_token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as reply:
            return bytes(reply.read()).decode()
    except OSError as err:
        return f"# kube-scheduler /metrics: {err}"


def _pending(plane: ControlPlane) -> dict[str, float]:
    return by_label(_scheduler_metrics(plane), "scheduler_pending_pods", "queue")


def _attempts(plane: ControlPlane) -> dict[str, float]:
    found = counters(_scheduler_metrics(plane), keep=lambda name: name == "scheduler_schedule_attempts_total")
    by_result: dict[str, float] = {}
    for series, value in found.items():
        result = series.partition('result="')[2].partition('"')[0]
        by_result[result] = by_result.get(result, 0.0) + value
    return by_result
