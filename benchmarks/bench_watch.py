"""The watch threads' work per event and the store's memory per pod, without an API server.

Each watch thread reads a line (one event) from its stream, decodes it and applies it to the store, whose
listener (the coordinator's) hears it. This drives that path straight from bytes shaped like a real API
server's (``benchmarks.e2e.objects``: managedFields, conditions, container statuses), with the coordinator
subscribed as in ``serve``:

1. **A cluster listed**: ``--nodes`` Nodes and ``--pods-per-node`` running pods of other schedulers per node plus
   ``--gangs`` pending gangs of 8, decoded page by page (500 items) as the first list does and installed in the
   store; CPU seconds, and the process's RSS growth (what the mirror holds) per object. First, in a fresh
   process, so that the growth is the mirror's and not memory freed earlier and reused.
2. **Per event**, CPU µs of this thread per event (the least of 15 rounds): a gang pod bound, the same pod Running
   (kubelet), a pod of another scheduler added/bound/deleted, a Node status heartbeat.

    .venv/bin/python -m benchmarks.bench_watch [--nodes 10000] [--pods-per-node 10] [--gangs 250]
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient

from benchmarks.e2e import objects
from benchmarks.e2e.processes import rss_bytes
from placement import solve
from scheduler.extender.cluster_writer import InMemoryClusterWriter
from scheduler.extender.coordinator import Coordinator
from scheduler.extender.state import ClusterStore
from scheduler.kube.mirror import Kind, mirror_informer

PAGE = 500


def _watcher(kind: Kind, store: ClusterStore) -> Any:
    """The mirror's informer for ``kind``, feeding ``store`` (no connection is ever made)."""
    return mirror_informer(kind, client=ApiClient(), store=store)


def _store() -> ClusterStore:
    store = ClusterStore()
    Coordinator(store=store, writer=InMemoryClusterWriter(store), solver=solve)  # subscribes its listener
    return store


def _line(event_type: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}).encode()


def _best_us(watcher: Any, lines: list[bytes], *, undo: list[bytes] | None = None, rounds: int = 15) -> float:
    """This thread's CPU µs per event feeding ``lines``, the least of ``rounds`` rounds: on a machine shared with
    other work even thread CPU time swings by half from round to round, and the least disturbed round is the
    cost of the code. ``undo`` (unmeasured) puts the store back between rounds (deleted pods must exist to be
    deleted again)."""
    samples = []
    for _ in range(rounds):
        started = time.thread_time()
        for line in lines:
            watcher._handle_line(line, "1")
        samples.append((time.thread_time() - started) / len(lines))
        for line in undo or []:
            watcher._handle_line(line, "1")
    return 1e6 * min(samples)


def per_event(rounds: int) -> list[tuple[str, float]]:
    store = _store()
    pods, nodes = _watcher("Pod", store), _watcher("Node", store)
    node_names = [objects.node(i, gpus=4)["metadata"]["name"] for i in range(64)]
    for i in range(len(node_names)):
        nodes._handle_line(_line("ADDED", objects.node(i, gpus=4)), "1")

    def gang_pod(i: int, *, node: str = "", running: bool = False) -> dict[str, Any]:
        pod = objects.pod(f"gang-{i // 8:05d}-w{i % 8}", gang=f"gang-{i // 8:05d}", node_name=node)
        pod["metadata"]["uid"] = f"uid-{i}"
        pod["metadata"]["resourceVersion"] = str(1000 + i)
        if running:
            pod["status"] = objects.running_status(node, i)
        return pod

    def other_pod(i: int, *, node: str = "") -> dict[str, Any]:
        pod = objects.pod(f"web-{i:07d}", namespace="web", scheduler="default-scheduler", gpus=0, cpu="1")
        pod["metadata"]["uid"] = f"web-uid-{i}"
        if node:
            pod["spec"]["nodeName"] = node
            pod["status"] = objects.running_status(node, i)
        return pod

    gang_added = [_line("ADDED", gang_pod(i)) for i in range(rounds)]
    gang_bound = [_line("MODIFIED", gang_pod(i, node=node_names[i % 64])) for i in range(rounds)]
    gang_running = [_line("MODIFIED", gang_pod(i, node=node_names[i % 64], running=True)) for i in range(rounds)]
    other_added = [_line("ADDED", other_pod(i)) for i in range(rounds)]
    other_bound = [_line("MODIFIED", other_pod(i, node=node_names[i % 64])) for i in range(rounds)]
    heartbeat = []
    for i in range(rounds):
        node = objects.node(i % 64, gpus=4)
        node["status"]["conditions"] = objects.node_conditions(f"2026-11-26T00:{i // 60 % 60:02d}:{i % 60:02d}Z")
        heartbeat.append(_line("MODIFIED", node))

    for line in gang_added:
        pods._handle_line(line, "1")
    gc.collect()
    gc.freeze()  # as serve does after its first sync: the collector does not re-scan the mirror on every event
    deleted = [line.replace(b'"type": "MODIFIED"', b'"type": "DELETED"', 1) for line in other_bound]
    return [
        ("gang pod bound (MODIFIED)", _best_us(pods, gang_bound)),
        ("gang pod Running (MODIFIED, kubelet status)", _best_us(pods, gang_running)),
        ("other scheduler's pod ADDED, pending", _best_us(pods, other_added)),
        ("other scheduler's pod bound and Running (MODIFIED)", _best_us(pods, other_bound)),
        ("other scheduler's pod DELETED", _best_us(pods, deleted, undo=other_bound)),
        ("Node status heartbeat (MODIFIED)", _best_us(nodes, heartbeat)),
    ]


def _pages(items: Iterator[dict[str, Any]], kind: str) -> Iterator[bytes]:
    page: list[dict[str, Any]] = []
    for item in items:
        item = dict(item)
        item.pop("kind", None)
        item.pop("apiVersion", None)
        page.append(item)
        if len(page) == PAGE:
            yield json.dumps({"kind": f"{kind}List", "metadata": {"resourceVersion": "1"}, "items": page}).encode()
            page = []
    if page:
        yield json.dumps({"kind": f"{kind}List", "metadata": {"resourceVersion": "1"}, "items": page}).encode()


def _cluster_pods(*, nodes: int, per_node: int, gangs: int) -> Iterator[dict[str, Any]]:
    template = objects.pod("other", namespace="web", scheduler="default-scheduler", gpus=0, cpu="1")
    for i in range(nodes * per_node):
        other = copy.deepcopy(template)
        node = f"node-{i % nodes:05d}"
        other["metadata"]["name"] = f"other-{i:07d}"
        other["metadata"]["uid"] = f"00000000-0000-4000-8000-{i:012d}"
        other["spec"]["nodeName"] = node
        other["status"] = objects.running_status(node, i)
        yield other
    for kind, obj in objects.gang_workload(gangs=gangs, pods_per_gang=8, gpus_per_pod=1):
        if kind == "Pod":
            yield obj


def listed(*, nodes: int, per_node: int, gangs: int) -> dict[str, float]:
    store = _store()
    node_watcher, pod_watcher = _watcher("Node", store), _watcher("Pod", store)
    gc.collect()
    rss_before, cpu = rss_bytes(os.getpid()), 0.0
    for kind, watcher, items in (
        ("Node", node_watcher, (objects.node(i, gpus=4) for i in range(nodes))),
        ("Pod", pod_watcher, _cluster_pods(nodes=nodes, per_node=per_node, gangs=gangs)),
    ):
        decoded: list[Any] = []
        for page in _pages(items, kind):
            started = time.thread_time()
            got, _ = watcher._decoder.page(page)
            decoded.extend(got)
            cpu += time.thread_time() - started
        started = time.thread_time()
        store.replace(kind, decoded)  # type: ignore[arg-type]
        cpu += time.thread_time() - started
        del decoded
    gc.collect()
    pods = nodes * per_node + gangs * 8
    return {"pods": pods, "cpu": cpu, "rss": rss_bytes(os.getpid()) - rss_before}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=500, help="events per round of a row")
    parser.add_argument("--nodes", type=int, default=10000)
    parser.add_argument("--pods-per-node", type=int, default=10)
    parser.add_argument("--gangs", type=int, default=250)
    args = parser.parse_args(argv)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"load average before: {load}")
    # The list first, in a fresh process: RSS growth is what the mirror holds, not reused free memory.
    result = listed(nodes=args.nodes, per_node=args.pods_per_node, gangs=args.gangs)
    print(
        f"listed {args.nodes} nodes and {result['pods']:.0f} pods ({args.pods_per_node} per node of other "
        f"schedulers, {args.gangs} gangs of 8): {result['cpu']:.1f} s of CPU; RSS grew "
        f"{result['rss'] / 2**20:.0f} MiB = {result['rss'] / (args.nodes + result['pods']):.0f} bytes per object"
    )
    print("per event, decode + store + the coordinator's listener, CPU µs (least of 15 rounds):")
    for what, micros in per_event(args.events):
        print(f"  {micros:7.1f}  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
