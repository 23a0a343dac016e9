"""The figures of one replay, under the JSON keys the benchmark publishes (camelCase, as the issue lists them).

Definitions (all over the window [0, horizon]):
- ``gpuHoursDelivered``: GPU time of gangs while running (pods of a started gang), in hours.
- ``gpuHoursHeld``: GPU time bound to gangs that had not started; ``gpuHoursStranded`` is the part of it held by
  gangs that never started before the horizon — capacity a missing gang guarantee burnt for nothing.
- ``utilisation``: delivered / (GPUs × horizon). Delivered + held + background + idle = GPUs × horizon exactly.
- ``waitMeanSeconds``/``waitP95Seconds``: start − arrival; a gang that never started counts horizon − arrival
  (censored), so a policy cannot look fast by starting few gangs.
- ``fragmentedGpus``: time-mean of free GPUs that no waiting gang could use (see ``fragmentation``).
- ``oneNvlinkDomainShare``: among started gangs whose guaranteed GPUs fit in the largest NVLink domain, the share
  whose GPU pods all sit in one NVLink domain (the ``nvlink`` level; the node where there is none).
  ``meanDomainsSpanned``: NVLink domains touched by a started gang's GPU pods, averaged. ``oneLeafShare``: share
  of started GPU gangs inside one leaf switch, when the cluster has a leaf level.
- ``placementScoreMean``: mean ``placementScore`` of the decisions that started gangs (policies that give one).
- ``decisionMedianMs``/``decisionP99Ms``: wall time of each call to the decision step.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from scheduler.replay.engine import GangRun, ReplayOutcome
from topology import Topology
from topology.levels import NVLINK_LEVEL

GPU = "nvidia.com/gpu"
LEAF_LEVEL = "leaf"
TIMELINE_POINTS = 200


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (``share`` in [0, 1]); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def nvlink_level(topology: Topology) -> str:
    return NVLINK_LEVEL if topology.has_level(NVLINK_LEVEL) else topology.levels[-1].name


def _gpu_nodes(run: GangRun) -> list[str]:
    demand = run.gang.demand
    return [node for pod, node in run.bound.items() if demand[pod].get(GPU, 0) > 0]


def _domain_capacity(topology: Topology, level: str) -> int:
    return max(
        (sum(topology.hosts[n].allocatable.get(GPU, 0) for n in nodes) for nodes in topology.domains(level).values()),
        default=0,
    )


def _timeline(outcome: ReplayOutcome) -> list[list[float]]:
    points = outcome.timeline
    if len(points) > TIMELINE_POINTS:
        stride = len(points) / TIMELINE_POINTS
        points = [points[int(i * stride)] for i in range(TIMELINE_POINTS)] + [points[-1]]
    gpus = max(outcome.capacity_gpus, 1)
    return [[round(t, 1), round(running / gpus, 4), round(held / gpus, 4)] for t, running, held in points]


def summarise(outcome: ReplayOutcome, topology: Topology) -> dict[str, Any]:
    horizon = outcome.horizon
    runs = outcome.runs
    arrived = [run for run in runs if run.gang.arrival <= horizon]
    started = [run for run in arrived if run.start is not None]
    completed = [run for run in started if run.end is not None]
    waits = [(run.start if run.start is not None else horizon) - run.gang.arrival for run in arrived]
    gpu_started = [run for run in started if _gpu_nodes(run)]
    level = nvlink_level(topology)
    domain_gpus = _domain_capacity(topology, level)
    fits_one = [run for run in gpu_started if run.gang.guaranteed_gpus <= domain_gpus]
    spans = [topology.domains_spanned(_gpu_nodes(run), level) for run in gpu_started]
    leaf = (
        [topology.domains_spanned(_gpu_nodes(run), LEAF_LEVEL) for run in gpu_started]
        if topology.has_level(LEAF_LEVEL)
        else []
    )
    scores = [run.placement_score for run in started if run.placement_score is not None]
    stranded = sum(run.held_gpu_seconds for run in arrived if run.start is None)
    ms = [seconds * 1000 for seconds in outcome.decision_seconds]
    capacity_seconds = outcome.capacity_gpus * horizon
    return {
        "gangsArrived": len(arrived),
        "gangsStarted": len(started),
        "gangsCompleted": len(completed),
        "gpuHoursDelivered": round(outcome.running_gpu_seconds / 3600, 3),
        "gpuHoursStranded": round(stranded / 3600, 3),
        "gpuHoursHeld": round(outcome.held_gpu_seconds / 3600, 3),
        "gpuHoursIdle": round(outcome.idle_gpu_seconds / 3600, 3),
        "gpuHoursBackground": round(outcome.background_gpu_seconds / 3600, 3),
        "waitMeanSeconds": round(statistics.fmean(waits), 1) if waits else 0.0,
        "waitP95Seconds": round(percentile(waits, 0.95), 1),
        "utilisation": round(outcome.running_gpu_seconds / capacity_seconds, 4) if capacity_seconds else 0.0,
        "fragmentedGpus": round(outcome.fragmented_gpu_seconds / horizon, 2) if horizon else 0.0,
        "oneNvlinkDomainShare": round(
            sum(1 for run in fits_one if topology.domains_spanned(_gpu_nodes(run), level) == 1) / len(fits_one), 4
        )
        if fits_one
        else None,
        "gangsFittingOneNvlinkDomain": len(fits_one),
        "meanDomainsSpanned": round(statistics.fmean(spans), 3) if spans else None,
        "oneLeafShare": round(sum(1 for n in leaf if n == 1) / len(leaf), 4) if leaf else None,
        "placementScoreMean": round(statistics.fmean(scores), 4) if scores else None,
        "decisions": len(ms),
        "decisionMedianMs": round(statistics.median(ms), 3) if ms else 0.0,
        "decisionP99Ms": round(percentile(ms, 0.99), 3),
        "capacityGpus": outcome.capacity_gpus,
        "horizonSeconds": round(horizon, 1),
        "nvlinkLevel": level,
        "utilisationOverTime": _timeline(outcome),
    }
