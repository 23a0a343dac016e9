"""What a fill draws from: gang templates, from a snapshot's PodGangs or from a pod trace in the openb format."""

from __future__ import annotations

import csv
from pathlib import Path

from api.core import GPU
from benchmarks.replay.loading import load_workload
from placement import GangRequest, GroupRequest
from scheduler.snapshot import Snapshot, load_snapshot

__all__ = ["TemplateError", "templates_from", "templates_from_snapshot", "templates_from_trace"]

MEBIBYTE = 1024 * 1024


class TemplateError(ValueError):
    """A shapes source that yields no gang to draw; the message names the file and what was missing."""


def templates_from_snapshot(snapshot: Snapshot) -> list[GangRequest]:
    """The snapshot's pending PodGangs as placement requests (through the one translator the replay uses)."""
    workload, _ = load_workload(snapshot)
    return [gang.request for gang in workload.gangs]


def templates_from_trace(path: Path) -> list[GangRequest]:
    """One single-pod gang per GPU pod of an openb-format pod list (``cpu_milli``, ``memory_mib``, ``num_gpu``):
    FGD's own workload. A pod sharing a GPU (``gpu_milli`` < 1000) asks here for the whole GPU: placement does not
    share GPUs."""
    found: list[GangRequest] = []
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            gpus = int(row["num_gpu"])
            if gpus <= 0:
                continue
            demand = {GPU: gpus, "cpu": int(row["cpu_milli"]), "memory": int(row["memory_mib"]) * MEBIBYTE}
            name = row.get("name") or f"pod-{len(found)}"
            found.append(GangRequest("trace", name, (GroupRequest("pod", (f"trace/{name}",), demand, 1),)))
    return found


def templates_from(path: str) -> list[GangRequest]:
    """Templates from ``path``: an openb-format ``.csv`` pod list, or any snapshot with pending PodGangs."""
    source = Path(path)
    found = templates_from_trace(source) if source.suffix == ".csv" else templates_from_snapshot(load_snapshot(path))
    if not found:
        raise TemplateError(f"{path}: no GPU gang to draw (a snapshot needs pending PodGangs, a trace GPU pods)")
    return found
