"""The figures of one replay, under the JSON keys the benchmark publishes (camelCase, as the issue lists them).

Definitions (all over the window [0, horizon]):
- ``gpuHoursDelivered``: GPU time of running gangs whose placement honours every ``required`` pack constraint,
  in hours. Running gangs placed against a ``required`` constraint (pod-by-pod and topology-blind policies do
  not read them) are ``gpuHoursViolating``: that is not the workload its owner asked for.
- ``gpuHoursHeld``: GPU time bound to gangs that had not started; ``gpuHoursStranded`` is the part of it held by
  gangs that never started before the horizon — capacity a missing gang guarantee burnt for nothing.
- ``utilisation``: delivered / (GPUs × horizon). Delivered + violating + held + background + idle = GPUs ×
  horizon exactly.
- ``waitMeanSeconds``/``waitP95Seconds``: start − arrival; a gang that never started counts horizon − arrival
  (censored), so a policy cannot look fast by starting few gangs.
- ``fragmentedGpus``: time-mean of free GPUs that no waiting gang could use (see ``fragmentation``).
- ``oneNvlinkDomainShare``: among started gangs that could have fit in the free GPUs of one NVLink domain when
  they were placed (``quality.fits_one_domain``), the share whose GPU pods all sit in one NVLink domain (the
  ``nvlink`` level; the node where there is none). ``oneNvlinkDomainShareBySize`` asks the same of every gang
  whose guaranteed GPUs are at most the largest domain's, free or not.
  ``meanDomainsSpanned``: NVLink domains touched by a started gang's GPU pods, averaged. ``oneLeafShare``: share
  of started GPU gangs inside one leaf switch, when the cluster has a leaf level.
- ``placementScoreMean`` (and ``placementScoreP10``/``P50``, the distribution's low tail and median):
  ``placementScore`` of the decisions that started gangs (policies that give one).
- ``decisionMedianMs``/``decisionP99Ms``: wall time of each call to the decision step.

Priorities and preemption (``--preemption``; the keys are there, zero or ``None``, without it):
- ``waitMeanSeconds`` counts every wait of a gang: an evicted gang waits again from its eviction.
- ``highPriorityWaitMeanSeconds``/``highPriorityWaitP95Seconds``: the same waits, of the gangs whose priority is
  above the lowest gang priority of the snapshot (``highPriorityGangs`` of them; ``None`` when every gang has the
  same priority).
- ``preemptions``: decisions whose applied choice evicted something; ``gpusEvicted``: the GPUs those pods held;
  ``gpusEvictedPerHighPriorityGang``: ``gpusEvicted`` over ``highPriorityGangs`` (only a gang above the lowest
  priority can preempt); ``gangsEvictedWhole``: evictions that stopped a gang (it waits and starts again).
- ``gpuHoursLost``: GPU time of runs evicted whole, thrown away. It was delivered when it ran, so it is part of
  ``gpuHoursDelivered`` (or of ``gpuHoursViolating``): the accounting identity still holds.
- ``gangsBroken``: gangs ever left running with a group below its ``minReplicas``, read from the engine's ledger
  after every eviction, not from the chooser; it must be 0.
- ``preemptorsNotStarted``: preemptions whose gang the step then did not start on what the victims freed.
- ``preemptionComparison``: every decision both choosers were asked (``decisions``: time, gang, priority, the
  choice applied, each chooser's status, GPUs evicted, gangs touched, pods and highest priority evicted), and a
  ``summary`` over the decisions both placed: where cpsat evicted fewer, as many or more GPUs than kai-greedy
  (``cpsatFewer``/``equal``/``cpsatMore``), the GPUs each would have evicted in all, and the decisions only one
  of them placed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from api.core import GPU
from benchmarks.replay.preemption import CHOOSERS, OFF, PreemptionRecord
from benchmarks.replay.quality import honours_required, nvlink_level
from benchmarks.replay.runs import GangRun, ReplayOutcome
from topology import Topology

LEAF_LEVEL = "leaf"
TIMELINE_POINTS = 200


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (``share`` in [0, 1]); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


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


def _running_seconds(run: GangRun, horizon: float) -> float:
    if run.start is None:
        return 0.0
    return (min(run.end, horizon) if run.end is not None else horizon) - run.start


def _share(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def _wait(run: GangRun, horizon: float) -> float:
    """Every wait of the gang summed; one under way at the horizon counts up to it."""
    return run.queued_seconds + (horizon - run.queued_since if run.start is None else 0.0)


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 1) if values else None


def comparison(records: Sequence[PreemptionRecord]) -> dict[str, Any] | None:
    """The per-decision record of both choosers, and how cpsat's GPUs evicted compare with kai-greedy's."""
    if not records:
        return None
    both = [r for r in records if all(r.choices[name].placed for name in CHOOSERS)]
    placed = [(r.choices["cpsat"].placed, r.choices["kai-greedy"].placed) for r in records]
    cpsat = [r.choices["cpsat"].gpus for r in both]
    greedy = [r.choices["kai-greedy"].gpus for r in both]
    pairs = list(zip(cpsat, greedy, strict=True))
    return {
        "summary": {
            "decisions": len(records),
            "bothPlaced": len(both),
            "cpsatFewer": sum(1 for c, g in pairs if c < g),
            "equal": sum(1 for c, g in pairs if c == g),
            "cpsatMore": sum(1 for c, g in pairs if c > g),
            "cpsatGpusEvicted": sum(cpsat),
            "kaiGreedyGpusEvicted": sum(greedy),
            "onlyCpsatPlaced": placed.count((True, False)),
            "onlyKaiGreedyPlaced": placed.count((False, True)),
            "cpsatDecisionP99Ms": round(percentile([r.choices["cpsat"].seconds * 1000 for r in records], 0.99), 3),
            "kaiGreedyDecisionP99Ms": round(
                percentile([r.choices["kai-greedy"].seconds * 1000 for r in records], 0.99), 3
            ),
        },
        "decisions": [r.to_json() for r in records],
    }


def _preemption(outcome: ReplayOutcome, arrived: Sequence[GangRun]) -> dict[str, Any]:
    horizon = outcome.horizon
    lowest = min((run.gang.priority for run in outcome.runs), default=0)
    high = [run for run in arrived if run.gang.priority > lowest]
    waits = [_wait(run, horizon) for run in high]
    applied = [record for record in outcome.preemptions if record.evicted]
    evicted = sum(run.gpus_evicted_for for run in outcome.runs)
    lost = sum(segment.gpu_seconds for run in outcome.runs for segment in run.past if segment.lost)
    return {
        "preemption": outcome.preemption,
        "highPriorityGangs": len(high),
        "highPriorityWaitMeanSeconds": _mean(waits),
        "highPriorityWaitP95Seconds": round(percentile(waits, 0.95), 1) if waits else None,
        "preemptions": len(applied),
        "gpusEvicted": evicted,
        "gpusEvictedPerHighPriorityGang": round(evicted / len(high), 2) if high else None,
        "gangsEvictedWhole": sum(run.evictions for run in outcome.runs),
        "gpuHoursLost": round(lost / 3600, 3),
        "gangsBroken": len(outcome.broken),
        "preemptorsNotStarted": sum(1 for record in applied if not record.started),
        "preemptionComparison": comparison(outcome.preemptions) if outcome.preemption != OFF else None,
    }


def summarise(outcome: ReplayOutcome, topology: Topology) -> dict[str, Any]:
    horizon = outcome.horizon
    arrived = [run for run in outcome.runs if run.gang.arrival <= horizon]
    started = [run for run in arrived if run.start is not None]
    completed = [run for run in started if run.end is not None]
    waits = [_wait(run, horizon) for run in arrived]
    honouring = {id(run) for run in started if honours_required(run.gang.request, run.bound, topology)}
    delivered = sum(run.bound_gpus * _running_seconds(run, horizon) for run in started if id(run) in honouring)
    violating = sum(run.bound_gpus * _running_seconds(run, horizon) for run in started if id(run) not in honouring)
    # Pods evicted before the gang ended, and runs evicted whole: their GPU time ran, as asked or not.
    for gone in arrived:
        for segment in gone.past:
            if honours_required(gone.gang.request, segment.bound, topology):
                delivered += segment.gpu_seconds
            else:
                violating += segment.gpu_seconds
    stranded = sum(run.held_gpu_seconds for run in arrived if run.start is None)
    gpu_started = [run for run in started if _gpu_nodes(run)]
    level = nvlink_level(topology)
    spans = {id(run): topology.domains_spanned(_gpu_nodes(run), level) for run in gpu_started}
    could_fit = [run for run in gpu_started if run.probe]
    by_size = [run for run in gpu_started if run.gang.guaranteed_gpus <= _domain_capacity(topology, level)]
    leaf = (
        [topology.domains_spanned(_gpu_nodes(r), LEAF_LEVEL) for r in gpu_started]
        if topology.has_level(LEAF_LEVEL)
        else []
    )
    scores = [run.placement_score for run in started if run.placement_score is not None]
    ms = [seconds * 1000 for seconds in outcome.decision_seconds]
    capacity_seconds = outcome.capacity_gpus * horizon
    return {
        "gangsArrived": len(arrived),
        "gangsStarted": sum(1 for run in arrived if run.first_start is not None),
        "gangsCompleted": len(completed),
        "gangsViolatingRequired": len(started) - len(honouring),
        "gpuHoursDelivered": round(delivered / 3600, 3),
        "gpuHoursViolating": round(violating / 3600, 3),
        "gpuHoursStranded": round(stranded / 3600, 3),
        "gpuHoursHeld": round(outcome.held_gpu_seconds / 3600, 3),
        "gpuHoursIdle": round(outcome.idle_gpu_seconds / 3600, 3),
        "gpuHoursBackground": round(outcome.background_gpu_seconds / 3600, 3),
        "waitMeanSeconds": round(statistics.fmean(waits), 1) if waits else 0.0,
        "waitP95Seconds": round(percentile(waits, 0.95), 1),
        "utilisation": round(delivered / capacity_seconds, 4) if capacity_seconds else 0.0,
        "fragmentedGpus": round(outcome.fragmented_gpu_seconds / horizon, 2) if horizon else 0.0,
        "oneNvlinkDomainShare": _share(sum(1 for r in could_fit if spans[id(r)] == 1), len(could_fit)),
        "gangsFittingOneNvlinkDomain": len(could_fit),
        "oneNvlinkDomainShareBySize": _share(sum(1 for r in by_size if spans[id(r)] == 1), len(by_size)),
        "meanDomainsSpanned": round(statistics.fmean(spans.values()), 3) if spans else None,
        "oneLeafShare": _share(sum(1 for n in leaf if n == 1), len(leaf)),
        "placementScoreMean": round(statistics.fmean(scores), 4) if scores else None,
        "placementScoreP10": round(percentile(scores, 0.10), 4) if scores else None,
        "placementScoreP50": round(percentile(scores, 0.50), 4) if scores else None,
        "decisions": len(ms),
        "decisionMedianMs": round(statistics.median(ms), 3) if ms else 0.0,
        "decisionP99Ms": round(percentile(ms, 0.99), 3),
        "capacityGpus": outcome.capacity_gpus,
        "horizonSeconds": round(horizon, 1),
        "nvlinkLevel": level,
        "utilisationOverTime": _timeline(outcome),
        **_preemption(outcome, arrived),
    }
