"""What a fill draws from: gang templates, from a snapshot's PodGangs or from a pod trace in the openb format."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from api.core import GPU
from api.quantity import maximum_units
from benchmarks.replay.loading import load_workload
from placement import GangRequest, GroupRequest
from scheduler.snapshot import Snapshot, load_snapshot
from scheduler.snapshot.files import UnreadableFile, read_bounded

__all__ = ["MAX_TRACE_BYTES", "TemplateError", "templates_from", "templates_from_snapshot", "templates_from_trace"]

MEBIBYTE = 1024 * 1024
MAX_TRACE_BYTES = 256 * MEBIBYTE
"""Largest pod list read: openb's lists are under 1 MiB; a trace of a million pods is about 100 MiB."""


class TemplateError(ValueError):
    """A shapes source that yields no gang to draw; the message names the file and what was missing."""


def templates_from_snapshot(snapshot: Snapshot) -> list[GangRequest]:
    """The snapshot's pending PodGangs as placement requests (through the one translator the replay uses)."""
    workload, _ = load_workload(snapshot)
    return [gang.request for gang in workload.gangs]


def templates_from_trace(path: Path) -> list[GangRequest]:
    """One single-pod gang per GPU pod of an openb-format pod list (``cpu_milli``, ``memory_mib``, ``num_gpu``):
    FGD's own workload. A pod sharing a GPU (``gpu_milli`` < 1000) asks here for the whole GPU: placement does not
    share GPUs. The file is read within ``MAX_TRACE_BYTES``; a row that is not a pod is a ``TemplateError`` naming
    its line and column."""
    try:
        text = read_bounded(path, limit=MAX_TRACE_BYTES).decode("utf-8")
    except UnreadableFile as err:
        raise TemplateError(f"{path}: {err}") from None
    except UnicodeDecodeError as err:
        raise TemplateError(f"{path}: not UTF-8 text (byte {err.start})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [column for column in _TRACE_COLUMNS if column not in (reader.fieldnames or ())]
    if missing:
        raise TemplateError(f"{path}: not an openb pod list: no column {', '.join(missing)} in its header line")
    found: list[GangRequest] = []
    try:
        for row in reader:
            where = f"{path}: line {reader.line_num}"
            gpus, cpu, memory = (_count(row, column, where) for column in _TRACE_COLUMNS)
            if gpus <= 0:
                continue
            demand = {GPU: gpus, "cpu": cpu, "memory": memory * MEBIBYTE}
            name = row.get("name") or f"pod-{len(found)}"
            found.append(GangRequest("trace", name, (GroupRequest("pod", (f"trace/{name}",), demand, 1),)))
    except csv.Error as err:
        raise TemplateError(f"{path}: line {reader.line_num}: not CSV: {err}") from None
    return found


_TRACE_COLUMNS = ("num_gpu", "cpu_milli", "memory_mib")
# The largest value each column may hold: the maxima a request may carry, in the column's unit.
_TRACE_MAXIMA = {
    "num_gpu": maximum_units(GPU),
    "cpu_milli": maximum_units("cpu"),
    "memory_mib": maximum_units("memory") // MEBIBYTE,
}


def _count(row: dict[str | Any, str | Any], column: str, where: str) -> int:
    text = row.get(column)
    value = int(text) if isinstance(text, str) and text.strip().isdigit() else None
    if value is None or value > _TRACE_MAXIMA[column]:
        raise TemplateError(f"{where}: {column} must be a whole number from 0 to {_TRACE_MAXIMA[column]}, got {text!r}")
    return value


def templates_from(path: str) -> list[GangRequest]:
    """Templates from ``path``: an openb-format ``.csv`` pod list, or any snapshot with pending PodGangs."""
    source = Path(path)
    found = templates_from_trace(source) if source.suffix == ".csv" else templates_from_snapshot(load_snapshot(path))
    if not found:
        raise TemplateError(f"{path}: no GPU gang to draw (a snapshot needs pending PodGangs, a trace GPU pods)")
    return found
