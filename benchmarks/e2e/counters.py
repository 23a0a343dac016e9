"""Counters read from Prometheus text (the extender's ``/metrics``, the API server's), and their change between two
readings: how many of each thing happened per bound pod. A counter the product adds later shows up by itself."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchmarks.controlplane.cluster import ControlPlane

__all__ = ["Counters", "api_counters", "counters", "extender_counters", "labels_of", "per_pod", "short"]

Counters = dict[str, float]  # series (name with labels) → value


def counters(text: str, *, keep: Callable[[str], bool] = lambda _: True, sums: bool = False) -> Counters:
    """Every ``*_total`` and ``*_count`` series of a Prometheus exposition whose name ``keep`` accepts (with
    ``sums``, the histograms' ``*_sum`` too: seconds, not counts)."""
    suffixes = ("_total", "_count", "_sum") if sums else ("_total", "_count")
    found: Counters = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name = series.split("{", 1)[0]
        if name.endswith(suffixes) and keep(name):
            try:
                found[series] = float(value)
            except ValueError:
                continue
    return found


def extender_counters(plane: ControlPlane, *, sums: bool = False) -> Counters:
    """The running extender's own counters (its ``/metrics``): verbs and their answers, plans, nominations, watch
    events (with ``sums``, its histograms' sums too)."""
    assert plane.extender is not None
    return counters(plane.extender.metrics(), keep=lambda name: name.startswith("grove_extender_"), sums=sums)


def api_counters(plane: ControlPlane, *, watch_events: bool = True) -> Counters:
    """The API server's requests (by verb, resource, subresource, code, client) and, with ``watch_events``, the
    watch events it sent (by kind)."""
    text = plane.api.request("GET", "/metrics").body
    names = {"apiserver_request_total", "apiserver_watch_events_total"} if watch_events else {"apiserver_request_total"}
    return counters(text if isinstance(text, str) else "", keep=names.__contains__)


def per_pod(before: Mapping[str, float], after: Mapping[str, float], pods: int, *, at_least: float = 0.0) -> Counters:
    """Each series' change divided by ``pods``, the series that moved by more than ``at_least`` per pod, largest
    first."""
    moved = {s: (v - before.get(s, 0.0)) / max(pods, 1) for s, v in after.items()}
    return dict(sorted(((s, d) for s, d in moved.items() if d > at_least), key=lambda item: -item[1]))


def by_label(text: str, name: str, label: str) -> dict[str, float]:
    """One gauge's (or counter's) series of a Prometheus exposition, by the value of ``label``."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        series, _, value = line.rpartition(" ")
        if series.split("{", 1)[0] == name and label in (labels := labels_of(series)):
            try:
                found[labels[label]] = float(value)
            except ValueError:
                continue
    return found


def labels_of(series: str) -> dict[str, str]:
    inside = series.partition("{")[2].rstrip("}")
    pairs = (part.split("=", 1) for part in inside.split('",') if "=" in part)
    return {key.strip(): value.strip('"') for key, value in pairs}


def short(series: str) -> str:
    """A series as a reader wants it: the API server's requests as ``POST pods/binding 201 (kube-scheduler)``, its
    watch events as ``watch pods``, our own without the ``grove_extender_`` prefix."""
    name, labels = series.split("{", 1)[0], labels_of(series)
    resource = "/".join(part for part in (labels.get("resource"), labels.get("subresource")) if part)
    if name == "apiserver_request_total":
        client = labels.get("system_client") or "others"
        return f"{labels.get('verb')} {resource} {labels.get('code')} ({client})"
    if name == "apiserver_watch_events_total":
        return f"watch {resource}"
    return series.removeprefix("grove_extender_")
