"""Planning inside the extender against ``placement.solve`` alone, and planning under Node churn.

A generated cluster (``bench_extender``'s: 8-GPU nodes in NVLink domains of 8, gangs of 8 two-GPU pods packed
into one ``nvidia.com/gpu.clique``) is loaded into a ``ClusterStore`` behind a ``Coordinator``. For each gang:

- **plan**: the coordinator plans it (forced), topology cached — members, free capacity, eligibility, solve;
- **solve alone**: ``placement.solve`` on the very request and view that plan handed the solver;
- **after a heartbeat**: a Node status update (the same Node with only its conditions newer, so nothing the
  topology reads) is applied to the store, then the gang is planned again.

Prints medians, the ratio plan / solve alone (target ≤ 1.2) and heartbeat / cached (target 1.0), and the time to
build the topology at this size.

    .venv/bin/python -m benchmarks.bench_planning [--nodes 1000] [--gangs 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_extender import make_cluster
from placement import solve
from placement.request import ClusterView, GangRequest, Result, SolveOptions
from scheduler.extender.cluster_writer import InMemoryClusterWriter
from scheduler.extender.coordinator import Coordinator, CoordinatorConfig
from scheduler.extender.coordinator.members import GangRef
from scheduler.extender.state import ClusterStore, load_snapshot_into
from scheduler.extender.translation.cluster_view import build_topology
from scheduler.snapshot import parse_snapshot


class _Recording:
    """The solver the coordinator calls: ``solve``, remembering what it was asked and how long it took."""

    def __init__(self) -> None:
        self.last: tuple[GangRequest, ClusterView, SolveOptions] | None = None
        self.seconds = 0.0

    def __call__(self, request: GangRequest, view: ClusterView, options: SolveOptions) -> Result:
        self.last = (request, view, options)
        started = time.perf_counter()
        result = solve(request, view, options)
        self.seconds = time.perf_counter() - started
        return result


def _ms(values: list[float]) -> str:
    return f"{1000 * statistics.median(values):.1f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gangs", type=int, default=50)
    args = parser.parse_args(argv)
    items: list[dict[str, Any]] = make_cluster(nodes=args.nodes, gangs=args.gangs, pods_per_gang=8, gpus_per_pod=2)
    snapshot = parse_snapshot({"apiVersion": "v1", "kind": "List", "items": items})
    store = ClusterStore()
    solver = _Recording()
    # One gang at a time (batch size 1): with every gang waiting, a plan would go to the queue-head batch model,
    # which never calls the injected solver, and there would be nothing to hold the plan against.
    config = CoordinatorConfig(batch_size=1)
    coordinator = Coordinator(store=store, writer=InMemoryClusterWriter(store), solver=solver, config=config)
    load_snapshot_into(store, snapshot)
    refs = [GangRef("default", gang.metadata.name) for gang in snapshot.podgangs]
    started = time.perf_counter()
    build_topology(store.nodes())
    topology_seconds = time.perf_counter() - started
    coordinator.planner.plan(refs[0], force=True)  # warm: the first plan builds and caches the topology
    plan, inside, alone, after = [], [], [], []
    for index, ref in enumerate(refs):
        started = time.perf_counter()
        coordinator.planner.plan(ref, force=True)
        plan.append(time.perf_counter() - started)
        inside.append(solver.seconds)
        assert solver.last is not None
        started = time.perf_counter()
        solve(*solver.last)
        alone.append(time.perf_counter() - started)
        node = snapshot.nodes[index % len(snapshot.nodes)]
        store.apply("Node", "MODIFIED", node.model_copy(update={"metadata": node.metadata.model_copy()}))
        started = time.perf_counter()
        coordinator.planner.plan(ref, force=True)
        after.append(time.perf_counter() - started)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"cluster: {args.nodes} nodes, {len(refs)} gangs of 8 pods; load average {load}")
    print(f"topology build: {1000 * topology_seconds:.1f} ms")
    print(f"solve alone (same request and view): {_ms(alone)}; the solver inside the plan: {_ms(inside)}")
    print(f"plan in the extender, topology cached: {_ms(plan)} = "
          f"{statistics.median(plan) / statistics.median(alone):.2f}× solve alone (target ≤ 1.2×)")  # fmt: skip
    print(f"plan after a Node heartbeat: {_ms(after)} = "
          f"{statistics.median(after) / statistics.median(plan):.2f}× cached (target 1.0×)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
