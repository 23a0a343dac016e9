"""The extender's planning CPU per gang as gangs arrive one at a time, in ``bench_e2e --real``'s shape.

1,008 nodes × 4 GPUs (NVLink domains of 18, as the real harness's fake nodes) are loaded into a ``ClusterStore``
behind a ``Coordinator`` with its shipped configuration (queue-head batches of 16). Then 375 PodGangs of 8 one-GPU
pods with no topology constraint arrive one after the other, as kube-scheduler's live run sees them: gang *i*'s
PodGang and pods appear, with the next gang's PodGang and half its pods already there (still gathering, so the plan
goes through the queue-head planner as in the real run), and gang *i* is planned as the background worker plans
it. Nothing binds, so every planned gang keeps its reservation: by the end ~375 gangs' reservations are held, as
when kube-scheduler lags behind the arrivals. With ``--alone`` each gang arrives whole before the next begins, as
Grove's flow brings them (the reconciler makes a PodCliqueSet's pods and PodGang together), so each is planned
alone, through ``placement.solve``.

Prints the process's CPU per plan (CP-SAT's worker threads included; nothing else runs): median and mean, overall
and over the last 100 gangs, and per pod.

    .venv/bin/python -m benchmarks.bench_plan_arrival [--nodes 1008] [--gangs 375] [--alone] [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from api.core import Node, Pod
from api.grove import PodGang
from benchmarks.controlplane.nodes import gpu_nodes
from benchmarks.controlplane.workload import Gang, pod_manifest, podgang_manifest
from placement import solve
from scheduler.extender.cluster_writer import InMemoryClusterWriter
from scheduler.extender.coordinator import Coordinator
from scheduler.extender.coordinator.members import GangRef
from scheduler.extender.state import ClusterStore

_NAMESPACE = "default"
_STAMP = "2025-01-01T00:00:00Z"


def node_objects(count: int) -> list[Node]:
    ready = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    return [
        Node.model_validate(
            {
                "metadata": {"name": spec.name, "labels": spec.labels},
                "status": {"capacity": spec.capacity(), "allocatable": spec.capacity(), "conditions": ready},
            }
        )
        for spec in gpu_nodes(count)
    ]


def gang_objects(index: int, size: int) -> tuple[PodGang, list[Pod]]:
    gang = Gang(name=f"gang-{index:04d}", size=size)
    manifest: dict[str, Any] = podgang_manifest(gang, _NAMESPACE)
    hours, seconds = divmod(index, 3600)
    manifest["metadata"]["creationTimestamp"] = f"2025-01-01T{hours:02d}:{seconds // 60:02d}:{seconds % 60:02d}Z"
    pods = []
    for name in gang.pod_names():
        body = pod_manifest(gang, name, _NAMESPACE)
        body["metadata"]["creationTimestamp"] = _STAMP
        pods.append(Pod.model_validate(body))
    return PodGang.model_validate(manifest), pods


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1008)
    parser.add_argument("--gangs", type=int, default=375)
    parser.add_argument("--pods-per-gang", type=int, default=8)
    parser.add_argument("--profile", help="write a cProfile of the planning pass here")
    parser.add_argument("--alone", action="store_true", help="each gang whole before the next: planned alone")
    args = parser.parse_args(argv)
    store = ClusterStore()
    coordinator = Coordinator(store=store, writer=InMemoryClusterWriter(store), solver=solve)
    store.replace("Node", node_objects(args.nodes))
    store.replace("Pod", [])
    store.replace("PodGang", [])
    store.mark_synced()
    gangs = [gang_objects(i, args.pods_per_gang) for i in range(args.gangs + 1)]
    half = 0 if args.alone else args.pods_per_gang // 2

    def arrive(index: int, pods: slice) -> None:
        podgang, members = gangs[index]
        if store.podgang(podgang.key) is None:
            store.apply("PodGang", "ADDED", podgang)
        for pod in members[pods]:
            store.apply("Pod", "ADDED", pod)

    if half:
        arrive(0, slice(0, half))
    profile = cProfile.Profile() if args.profile else None
    cpu: list[float] = []
    placed = 0
    for index in range(args.gangs):
        arrive(index, slice(half, None))
        if half:
            arrive(index + 1, slice(0, half))
        ref = GangRef(_NAMESPACE, gangs[index][0].metadata.name)
        started = time.process_time()
        if profile is not None:
            profile.enable()
        coordinator.planner.plan(ref)
        if profile is not None:
            profile.disable()
        cpu.append(time.process_time() - started)
        summary = coordinator.table.summary(ref.key)
        placed += summary is not None and str(summary.state) == "Planned"
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    last = cpu[-100:]
    reservations = coordinator.table.reservation_count()
    alone = " (each alone)" if args.alone else ""
    print(f"cluster: {args.nodes} nodes × 4 GPUs; {args.gangs} gangs of {args.pods_per_gang} one-GPU pods, no "
          f"topology constraint, arriving one at a time{alone}; {placed} planned; {reservations} pods' reservations "
          f"held at the end; load average {load}")  # fmt: skip
    print(f"planning CPU per gang: median {1000 * statistics.median(cpu):.2f} ms, "
          f"mean {1000 * statistics.mean(cpu):.2f} ms; last 100 gangs median {1000 * statistics.median(last):.2f} "
          f"ms; {1000 * sum(cpu) / (args.gangs * args.pods_per_gang):.2f} ms per pod")  # fmt: skip
    if profile is not None:
        profile.dump_stats(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
