"""``bench_e2e --real``'s report: pods per second of each phase and their ratio, then where each bound pod's CPU,
calls, writes and models went."""

from __future__ import annotations

import argparse
import os

from benchmarks.e2e.counters import Counters, labels_of, short
from benchmarks.e2e.phase import PROFILE_SECONDS, Phase, Queue, Uniform
from benchmarks.e2e.processes import ms_per_pod

__all__ = ["ahead_line", "counts_line", "models_line", "report"]


def _sum(found: Counters, name: str, **labels: str) -> float:
    """The sum of ``name``'s series whose labels include ``labels``."""
    return sum(
        value
        for series, value in found.items()
        if series.split("{", 1)[0] == name and all(labels_of(series).get(k) == v for k, v in labels.items())
    )


def counts_line(phase: Phase) -> str:
    """What each bound pod cost in calls, handshakes, API writes, watch events and plans, by name."""
    ours, api = phase.extender_counters, phase.api_counters
    calls = {v: _sum(ours, "grove_extender_request_seconds_count", verb=v) for v in ("filter", "prioritize", "bind")}
    answers = {a: _sum(ours, "grove_extender_filter_answers_total", answer=a) for a in ("node", "error", "refused")}
    bindings = _sum(api, "apiserver_request_total", verb="POST", resource="pods", subresource="binding")
    status = _sum(api, "apiserver_request_total", verb="PATCH", resource="podgangs", subresource="status")
    pod_status = _sum(api, "apiserver_request_total", resource="pods", subresource="status")
    nominations = _sum(ours, "grove_extender_nominations_total")
    events = _sum(api, "apiserver_request_total", resource="events")
    watched = {k: _sum(ours, "grove_extender_watch_events_total", kind=k) for k in ("Pod", "Node", "PodGang")}
    seen = {
        n: _sum(ours, "grove_extender_filter_nominations_total", nomination=n) for n in ("alone", "scanned", "none")
    }
    return (
        f"filter {calls['filter']:.3f} (node {answers['node']:.3f}, Error {answers['error']:.3f}, "
        f"refused {answers['refused']:.3f}), prioritize {calls['prioritize']:.3f}, bind {calls['bind']:.3f}; "
        f"TLS handshakes {_sum(ours, 'grove_extender_tls_handshakes_total'):.3f}; API writes: bindings "
        f"{bindings:.3f}, PodGang status {status:.3f}, pod status {pod_status:.3f}, Events {events:.3f} (all "
        f"clients); watch events decoded: " + ", ".join(f"{k} {v:.3f}" for k, v in watched.items())
        + f"; nominations written during the drive {nominations:.3f}, filters on the nominated node alone "
        f"{seen['alone']:.3f} (nominated but scanned {seen['scanned']:.3f}, none {seen['none']:.3f})"
        + f"; plans {_sum(ours, 'grove_extender_plans_total'):.3f}, CP-SAT models "
        f"{_sum(ours, 'grove_extender_models_total'):.3f}"
    )  # fmt: skip


def ahead_line(phase: Phase) -> str:
    """What planning ahead took, from the queue's first create until every gang was planned and nominated."""
    found = phase.planning_counters
    threads = sorted(phase.planning_by_thread.items(), key=lambda item: -item[1])
    heads, models = _sum(found, "grove_extender_queue_heads_total"), _sum(found, "grove_extender_models_total")
    return (
        f"ahead, from the first create: queue heads {heads:.0f}, CP-SAT models {models:.0f}, plans "
        f"{_sum(found, 'grove_extender_plans_total'):.0f}; CPU by thread, s: "
        + ", ".join(f"{name} {s:.1f}" for name, s in threads if s >= 0.05)
    )


def _extender_lines(through: Phase, args: argparse.Namespace) -> None:
    """What the extender of one phase cost, by thread, system call and counter."""
    pods = max(through.bound, 1)
    idle, planning = 1000 * through.extender_idle, through.planning_seconds
    ahead = 1000 * through.planning_cpu / pods
    nominated = "planned, not nominated" if args.no_nominate else "planned and nominated"
    before = ("nothing planned ahead (live: every plan and nomination is in the drive)" if args.live else
              f"{nominated} ahead in {planning:.1f} s, at {ahead:.2f} ms of its CPU per pod (from the queue's first "
              "create; not in the figure before)")  # fmt: skip
    drive = 1000 * through.cpu["extender"] / pods
    start = 1000 * through.startup_cpu / pods
    print(f"{through.mode} CPU per bound pod: {drive:.2f} ms, idle {idle:.0f} ms/s; {before}; whole (ahead + drive) "
          f"{ahead + drive:.2f} ms; its start before the queue existed (imports, listing the cluster) "
          f"{through.startup_cpu:.1f} s, {start:.2f} ms per pod more")  # fmt: skip
    if not args.live:
        print(ahead_line(through))
    parts = sorted(through.by_thread.items(), key=lambda item: -item[1])
    print("extender CPU by thread, ms per bound pod: "
          + ", ".join(f"{name} {1000 * s / pods:.2f}" for name, s in parts if s > 0))  # fmt: skip
    if through.perf:
        print("extender CPU over the drive as the kernel counts it (perf, cpu-clock), by thread and shared object:\n"
              + through.perf)  # fmt: skip
    reads, writes = through.extender_io
    print(f"extender read()/write() calls per bound pod (event loops' sockets and wake-ups, not the watches' "
          f"recv): reads {reads / pods:.2f}, writes {writes / pods:.2f} ("
          + ", ".join(f"{name} {n / pods:.2f}" for name, n in sorted(through.writes_by_thread.items()) if n)
          + ")")  # fmt: skip
    print("per bound pod: " + counts_line(through))
    print("extender counters per bound pod: "
          + ", ".join(f"{short(s)} {v:.3f}" for s, v in list(through.extender_counters.items())[:20]))  # fmt: skip


def _queue_line(queue: Queue, args: argparse.Namespace) -> str:
    if isinstance(queue, Uniform):
        pack = "each gang in one NVLink domain (required)" if args.required_pack else "no topology constraint"
        return f"{args.gangs} PodGangs × {args.pods_per_gang} pods of 1 GPU, {pack}"
    groups = sum(len(g["spec"]["podgroups"]) for g in queue.podgangs)
    used = sum(int(p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]) for p in queue.used)
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(queue.kinds.items()))
    return (f"mix (seed {args.seed}): {len(queue.podgangs)} PodGangs ({kinds}) of {queue.size} pods in {groups} "
            f"groups; {used} GPUs used by {len(queue.used)} pods of another scheduler")  # fmt: skip


def models_line(phase: Phase) -> str:
    """The CP-SAT models the phase's plans needed, from the extender's start: how many were proven optimal, and
    what a plan that needed one took."""
    found = phase.final_counters
    parts = []
    for path in ("head", "gang"):
        proven = _sum(found, "grove_extender_models_total", path=path, proven="true")
        unproven = _sum(found, "grove_extender_models_total", path=path, proven="false")
        count = _sum(found, "grove_extender_model_seconds_count", path=path)
        seconds = _sum(found, "grove_extender_model_seconds_sum", path=path)
        mean = f", {1000 * seconds / count:.0f} ms each on average" if count else ""
        parts.append(f"{path} plans {proven + unproven:.0f} ({proven:.0f} proven optimal){mean}")
    heads = _sum(found, "grove_extender_queue_heads_total")
    plans = _sum(found, "grove_extender_plans_total")
    return f"CP-SAT models from the extender's start ({heads:.0f} queue heads, {plans:.0f} gang plans): " + "; ".join(
        parts
    )


def report(phases: list[Phase], args: argparse.Namespace, *, load: str, queue: Queue) -> None:
    shape = _queue_line(queue, args)
    if args.live:
        shape += "; live: pods created once kube-scheduler runs, timed from the first create"
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    print(f"real kube-apiserver + kube-scheduler v1.36 ({assets}): {args.nodes} nodes × 4 GPUs, {shape}; client QPS "
          f"500; load {load}")  # fmt: skip
    by_mode = {p.mode: p for p in phases}
    gangs = len(queue.guaranteed())
    for phase in phases:
        cpu = ms_per_pod(phase.cpu, phase.bound)
        print(f"{phase.mode:>9}: bound {phase.bound}/{phase.total} in {phase.seconds:.1f} s = "
              f"{phase.pods_per_second:.1f} pods/s, {phase.whole}/{gangs} gangs whole; CPU ms per bound pod: "
              f"{cpu}")  # fmt: skip
    plain = by_mode.get("alone")
    for through in (p for p in phases if p.mode.startswith("extender")):
        if plain and plain.pods_per_second:
            ratio = through.pods_per_second / plain.pods_per_second
            print(f"ratio through the {through.mode} / alone: {ratio:.2f}×")
        _extender_lines(through, args)
        print(models_line(through))
    for phase in phases:
        if phase.scheduler_activity:
            pods = max(phase.bound, 1)
            ms = 1000 * phase.cpu.get("kube-scheduler", 0.0) / pods
            shares = ", ".join(f"{name} {ms * share:.2f}" for name, share in phase.scheduler_activity.items())
            print(f"kube-scheduler CPU by activity ({phase.mode}; shares of its first {PROFILE_SECONDS:g} s applied "
                  f"to its CPU per bound pod), ms per bound pod: {shares}")  # fmt: skip
    for phase in phases:
        top = list(phase.api_counters.items())[:12]
        print(f"API server per bound pod ({phase.mode}): " + ", ".join(f"{short(s)} {v:.2f}" for s, v in top))
