"""How long a big cluster's snapshot takes to load, and how much memory it needs.

Generates a snapshot shaped like ``kubectl get nodes,pods -A -o json`` of a large GPU cluster (GB200-like
trays, 18 per NVLink clique, leaf/spine labels, bound pods with kubectl's usual noise fields), then times each
stage the CLI and the extender run on start-up: ``load_snapshot``, building the ``Topology`` graph, and free
capacity. Wall times come from a plain run; peak Python heap from a second run under tracemalloc (which slows
it, so its times are not reported); ``ru_maxrss`` is the measuring process's peak — measurement runs in a fresh
process, so the generator's memory is not counted.

    python benchmarks/bench_snapshot_load.py [--nodes 10000] [--pods-per-node 2] [--keep PATH]
    python benchmarks/bench_snapshot_load.py --from PATH      # measure an existing snapshot (e.g. a kubectl dump)
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.progress import track

from api.core import GPU
from scheduler.extender.translation.cluster_view import build_topology, choose_levels, free_capacity
from scheduler.snapshot import Snapshot, dump_snapshot, load_snapshot

NET = "network.topology.nvidia.com"


def _node(index: int) -> dict[str, Any]:
    name = f"node-{index:05d}"
    clique, leaf, spine = index // 18, index // 36, index // 576
    labels = {
        "beta.kubernetes.io/arch": "arm64",
        "kubernetes.io/arch": "arm64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "gb200-nvl72-tray",
        "topology.kubernetes.io/region": "us-east",
        "topology.kubernetes.io/zone": f"us-east-1{'abc'[spine % 3]}",
        "nvidia.com/gpu.product": "NVIDIA-GB200",
        "nvidia.com/gpu.count": "4",
        "nvidia.com/gpu.clique": f"cluster-{clique // 64}.{clique}",
        f"{NET}/accelerator": f"nvl-{clique}",
        f"{NET}/leaf": f"leaf-{leaf}",
        f"{NET}/spine": f"spine-{spine}",
    }
    quantities = {"cpu": "140", "memory": "880Gi", "pods": "110", "ephemeral-storage": "3500Gi", GPU: "4"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"00000000-0000-0000-0000-{index:012d}",
            "resourceVersion": str(1000 + index),
            "creationTimestamp": "2026-10-01T00:00:00Z",
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach": "1",
            },
        },
        "spec": {"podCIDR": f"10.{index // 256 % 256}.{index % 256}.0/24"},
        "status": {
            "capacity": quantities,
            "allocatable": quantities,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "nodeInfo": {"kubeletVersion": "v1.36.0", "architecture": "arm64"},
        },
    }


def _pod(index: int, node: str, gpus: int) -> dict[str, Any]:
    name = f"job-{index:06d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": f"team-{index % 40}",
            "uid": f"11111111-0000-0000-0000-{index:012d}",
            "creationTimestamp": "2026-11-25T10:00:00Z",
            "labels": {"app": "train", "job": f"job-{index // 8}"},
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "nodeName": node,
            "containers": [
                {
                    "name": "main",
                    "image": "nvcr.io/nvidia/pytorch:25.10-py3",
                    "resources": {
                        "requests": {"cpu": "16", "memory": "128Gi", GPU: str(gpus)},
                        "limits": {GPU: str(gpus)},
                    },
                    "env": [{"name": "NCCL_DEBUG", "value": "WARN"}],
                }
            ],
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
        },
        "status": {"phase": "Running", "podIP": f"10.1.{index // 256 % 256}.{index % 256}"},
    }


def generate(nodes: int, pods_per_node: int, seed: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    pod_index = 0
    for index in track(range(nodes), description=f"generating {nodes} nodes"):
        yield _node(index)
        for _ in range(rng.randint(0, 2 * pods_per_node)):
            yield _pod(pod_index, f"node-{index:05d}", rng.choice([1, 2, 4]) if pods_per_node else 0)
            pod_index += 1


def _stages(path: Path) -> list[tuple[str, Callable[[dict[str, Any]], Any]]]:
    def load(state: dict[str, Any]) -> Any:
        state["snapshot"] = load_snapshot(path)

    def topology(state: dict[str, Any]) -> Any:
        snapshot: Snapshot = state["snapshot"]
        state["topology"] = build_topology(snapshot.nodes, levels=choose_levels(bindings=snapshot.topology_bindings))

    def free(state: dict[str, Any]) -> Any:
        snapshot: Snapshot = state["snapshot"]
        state["free"] = free_capacity(snapshot.nodes, snapshot.pods)

    return [("load_snapshot", load), ("build Topology", topology), ("free capacity", free)]


def run(path: Path) -> None:
    stages = _stages(path)
    state: dict[str, Any] = {}
    total = 0.0
    for name, stage in stages:
        gc.collect()
        start = time.perf_counter()
        stage(state)
        elapsed = time.perf_counter() - start
        total += elapsed
        print(f"  {name:<15} {elapsed:7.2f} s")
    print(f"  {'total':<15} {total:7.2f} s")
    snapshot: Snapshot = state["snapshot"]
    print(f"  ({len(snapshot.nodes)} nodes, {len(snapshot.pods)} pods)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"  peak RSS (ru_maxrss)           {rss / 1024:8.1f} MiB  (before tracemalloc, whose bookkeeping adds more)")
    state.clear()
    gc.collect()
    tracemalloc.start()
    for _, stage in stages:
        stage(state)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"  peak Python heap (tracemalloc) {peak / 2**20:8.1f} MiB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="time and memory to load a big snapshot")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods-per-node", type=int, default=2, help="mean bound pods per node")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="write the snapshot here and keep it (default: a temp file)")
    parser.add_argument("--from", dest="source", type=Path, help="measure this snapshot instead of generating one")
    args = parser.parse_args(argv)
    if args.source is not None:
        print(f"{args.source}: {args.source.stat().st_size / 2**20:.1f} MiB  (python {sys.version.split()[0]})")
        run(args.source)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "big.json"
        dump_snapshot(generate(args.nodes, args.pods_per_node, args.seed), path)
        # Measure in a fresh process: this one's heap still holds the generator's garbage.
        subprocess.run([sys.executable, __file__, "--from", str(path)], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
