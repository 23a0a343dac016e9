"""The shipped scenarios: a cluster layout, a gang mix and an arrival load each. Every probability below is a
stated choice of ours (see ``benchmarks/README.md`` for the reasoning and the sources it leans on)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from api.core import GPU
from benchmarks.generate import clusters
from benchmarks.generate.nodes import CLIQUE, HOSTNAME, LEAF, PRODUCT
from benchmarks.generate.objects import gang_objects
from benchmarks.generate.priorities import PRIORITY_CLASSES, priority_arrivals
from benchmarks.generate.shapes import GangShape, Pack, disaggregated, leader_workers, training
from benchmarks.generate.traces import TraceDistributions, load_distributions
from benchmarks.generate.workload import Arrival, sample_arrivals, weighted

START = datetime(2026, 1, 1, tzinfo=UTC)
NAMESPACE = "bench"
LOAD = 1.2
ALIBABA_FRACTION = 1 / 16  # of each (model, GPUs, CPUs) stratum: the fleet's mix, at a size a bench run can take


Arrivals = Callable[..., list[Arrival]]
"""(rng, traces, capacity_gpus, count, load) → the gangs in arrival order, for a scenario whose workload is not one
stream of one shape distribution."""


@dataclass(frozen=True)
class Scenario:
    name: str
    nodes: Callable[[random.Random, Path], list[dict[str, Any]]]
    shape: Callable[[random.Random, TraceDistributions, list[dict[str, Any]]], GangShape] | None
    gangs: int  # enough arrivals for the window to span several mean run times
    arrivals: Arrivals | None = None  # instead of ``shape`` at one Poisson rate
    priority_classes: tuple[dict[str, Any], ...] = ()


def _required_or_preferred(rng: random.Random, key: str, *, required_share: float) -> Pack:
    return Pack(required=key) if rng.random() < required_share else Pack(preferred=key)


def _gb200_shape(rng: random.Random, traces: TraceDistributions, _nodes: list[dict[str, Any]]) -> GangShape:
    draw = rng.random()
    if draw < 0.45:
        workers = weighted(rng, {2: 0.2, 4: 0.3, 8: 0.25, 16: 0.15, 32: 0.1})
        # 32 trays × 4 GPUs exceed one 72-GPU rack: such gangs must share a leaf instead.
        pack = (
            Pack(required=LEAF, preferred=CLIQUE)
            if workers > 18
            else _required_or_preferred(rng, CLIQUE, required_share=0.7)
        )
        shape = training(workers=workers, gpus=4, pack=pack)
    elif draw < 0.75:
        workers = weighted(rng, {1: 0.3, 3: 0.4, 7: 0.2, 15: 0.1})
        shape = leader_workers(workers=workers, gpus=4, pack=_required_or_preferred(rng, CLIQUE, required_share=0.5))
    else:
        shape = disaggregated(
            prefill=weighted(rng, {1: 0.4, 2: 0.4, 4: 0.2}),
            prefill_gpus=traces.pod_gpu_count(rng, at_most=4),
            decode_workers=weighted(rng, {0: 0.3, 1: 0.4, 3: 0.3}),
            decode_gpus=4,
            extra_prefill=weighted(rng, {0: 0.5, 1: 0.5}),
            scope=CLIQUE,
            gang=Pack(preferred=CLIQUE),
        )
    return replace(shape, cpu_per_gpu=32, memory_gi_per_gpu=200)


def _h100_shape(rng: random.Random, traces: TraceDistributions, _nodes: list[dict[str, Any]]) -> GangShape:
    draw = rng.random()
    if draw < 0.5:
        workers = weighted(rng, {1: 0.2, 2: 0.25, 4: 0.25, 8: 0.15, 16: 0.1, 32: 0.05})
        shape = training(workers=workers, gpus=8, pack=_required_or_preferred(rng, LEAF, required_share=0.5))
    elif draw < 0.8:
        # Tensor-parallel 4-GPU pods: a pair needs NVLink, i.e. one DGX (the NVLink domain is the node here).
        workers = weighted(rng, {1: 0.6, 3: 0.4})
        pack = Pack(required=HOSTNAME) if workers == 1 else Pack(preferred=LEAF)
        shape = leader_workers(workers=workers, gpus=4, pack=pack)
    else:
        shape = disaggregated(
            prefill=weighted(rng, {1: 0.4, 2: 0.4, 4: 0.2}),
            prefill_gpus=traces.pod_gpu_count(rng, at_most=8),
            decode_workers=weighted(rng, {0: 0.3, 1: 0.4, 3: 0.3}),
            decode_gpus=8,
            extra_prefill=weighted(rng, {0: 0.5, 1: 0.5}),
            scope=LEAF,
            gang=Pack(preferred=LEAF),
        )
    return replace(shape, cpu_per_gpu=24, memory_gi_per_gpu=200)


def _selected(node: dict[str, Any], selector: dict[str, str]) -> bool:
    labels = node["metadata"]["labels"]
    return all(labels.get(key) == value for key, value in selector.items())


def _alibaba_shape(rng: random.Random, traces: TraceDistributions, nodes: list[dict[str, Any]]) -> GangShape:
    # The GPU model is that of a node drawn in proportion to its GPUs, so demand follows the fleet's make-up.
    node = rng.choices(nodes, weights=[int(n["status"]["allocatable"][GPU]) for n in nodes])[0]
    labels = node["metadata"]["labels"]
    per_node = int(node["status"]["allocatable"][GPU])
    cpus = int(node["status"]["allocatable"]["cpu"])
    selector = {PRODUCT: labels[PRODUCT], "nvidia.com/gpu.count": str(per_node)}
    gpus = traces.pod_gpu_count(rng, at_most=per_node)
    if rng.random() < 0.6:
        # Training on multi-GPU boxes takes whole nodes half the time (the openb pod sizes are mostly 1 GPU,
        # which is inference-heavy); the other half keeps the trace's per-pod size.
        if per_node > 1 and rng.random() < 0.5:
            gpus = per_node
        workers = weighted(rng, {1: 0.2, 2: 0.25, 4: 0.25, 8: 0.2, 16: 0.1})
        fits_node = workers * gpus <= per_node
        pack = _required_or_preferred(rng, HOSTNAME, required_share=0.5) if fits_node else Pack(preferred=LEAF)
        shape = training(workers=workers, gpus=gpus, pack=pack)
    else:
        workers = weighted(rng, {1: 0.4, 3: 0.4, 7: 0.2})
        fits_node = (workers + 1) * gpus <= per_node
        shape = leader_workers(workers=workers, gpus=gpus, pack=Pack(preferred=HOSTNAME if fits_node else LEAF))
    # A gang must fit in half its GPU model's share of the sampled fleet, or it would rarely (or never) run.
    pool = sum(int(n["status"]["allocatable"][GPU]) for n in nodes if _selected(n, selector))
    while shape.guaranteed_gpus > pool // 2 and shape.roles[-1].replicas > 1:
        last = shape.roles[-1]
        half = last.replicas // 2
        shape = replace(shape, roles=(*shape.roles[:-1], replace(last, replicas=half, min_available=half)))
    return replace(shape, node_selector=selector, cpu_per_gpu=max(1, cpus // per_node // 2), memory_gi_per_gpu=32)


SCENARIOS: dict[str, Scenario] = {
    "gb200-nvl72": Scenario(
        "gb200-nvl72",
        lambda _rng, _data: clusters.gb200_nvl72(racks=8, racks_per_leaf=2, leaves_per_spine=2),
        _gb200_shape,
        gangs=300,
    ),
    "dgx-h100": Scenario(
        "dgx-h100", lambda _rng, _data: clusters.dgx_h100(scalable_units=4, sus_per_spine=2), _h100_shape, gangs=400
    ),
    "alibaba-hetero": Scenario(
        "alibaba-hetero",
        lambda rng, data: clusters.alibaba_heterogeneous(
            clusters.read_alibaba_nodes(data / "alibaba-spot-gpu-v2026" / "node_info_df.csv"),
            fraction=ALIBABA_FRACTION,
            rng=rng,
        ),
        _alibaba_shape,
        gangs=600,
    ),
    # A high-priority inference gang arrives on a full cluster of training gangs (``priorities``): what
    # ``bench --preemption`` compares the victim choosers on. 4 NVL72 racks (288 GPUs), about 6 h of arrivals.
    "gb200-preemption": Scenario(
        "gb200-preemption",
        lambda _rng, _data: clusters.gb200_nvl72(racks=4, racks_per_leaf=2, leaves_per_spine=2),
        None,
        gangs=100,
        arrivals=priority_arrivals,
        priority_classes=PRIORITY_CLASSES,
    ),
}


def build(
    name: str, *, seed: int, data_dir: Path, gangs: int | None = None, load: float = LOAD
) -> list[dict[str, Any]]:
    """Every item of the scenario's snapshot: Nodes, its PriorityClasses, then each PodGang followed by its pods, in
    arrival order."""
    scenario = SCENARIOS[name]
    rng = random.Random(f"{name}/{seed}")  # str seeds hash deterministically (sha512), unlike hash()
    traces = load_distributions(data_dir)
    nodes = scenario.nodes(rng, data_dir)
    capacity = sum(int(node["status"]["allocatable"][GPU]) for node in nodes)
    if scenario.arrivals is not None:
        arrivals = scenario.arrivals(
            rng=rng, traces=traces, capacity_gpus=capacity, count=gangs or scenario.gangs, load=load
        )
    else:
        shape = scenario.shape
        assert shape is not None
        arrivals = sample_arrivals(
            count=gangs or scenario.gangs,
            load=load,
            capacity_gpus=capacity,
            shape=lambda r: shape(r, traces, nodes),
            traces=traces,
            rng=rng,
        )
    items = [*nodes, *scenario.priority_classes]
    for index, arrival in enumerate(arrivals):
        pcs = f"{arrival.shape.kind}-{index:04d}"
        items.extend(
            gang_objects(
                arrival.shape,
                pcs=pcs,
                namespace=NAMESPACE,
                start=START,
                arrival_seconds=arrival.at_seconds,
                duration_seconds=arrival.duration_seconds,
            )
        )
    return items
