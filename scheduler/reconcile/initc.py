"""``grove-initc``: wait until every parent PodClique has ``minAvailable`` Ready pods, then let the pod start.

Grove's init container (``operator/initc``) takes ``--podcliques=<parentFQN>:<minAvailable>`` once per parent,
watches pods, and exits when each parent has enough Ready pods. This is ours, run as ``grove-extender initc``: one
list-then-watch of the parents' pods (label ``grove.io/podclique in (…)``), relisted on 410 Gone or any error after
a bounded exponential backoff (0.5 s doubling to 30 s; a good list resets it). A stop (SIGTERM) ends the wait at once.
The state is a pure class (``ParentWait``) fed by ``wait_for_parents``; the Kubernetes side is a small protocol.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from urllib3.exceptions import HTTPError

from api.grove import LABEL_PODCLIQUE
from scheduler.kube.backoff import Backoff
from scheduler.reconcile.client import ApiError

__all__ = ["ParentWait", "PodSource", "parse_podcliques", "wait_for_parents"]

log = logging.getLogger(__name__)


class PodSource(Protocol):
    """The two reads the init container makes (``KubeApi`` implements them over HTTP)."""

    def list_pods(self, namespace: str, selector: str) -> tuple[list[dict[str, Any]], str]:
        """Pods matching ``selector`` and the list's resourceVersion; raises ``ApiError`` when refused."""
        ...

    def watch_pods(self, namespace: str, selector: str, version: str) -> Iterator[dict[str, Any]]:
        """``{type, object}`` events after ``version`` until the server ends the watch; ``ApiError`` on 410."""
        ...

    def close_streams(self) -> None:
        """Unblock an open watch from another thread (on stop)."""
        ...


def parse_podcliques(values: Iterable[str]) -> dict[str, int]:
    """``["name:count", …]`` → ``{name: count}``; ``ValueError`` naming the bad value, as Grove's initc refuses."""
    found: dict[str, int] = {}
    for value in values:
        name, sep, count = value.rpartition(":")
        if not sep or not name:
            raise ValueError(f"--podcliques={value}: expected <podclique FQN>:<minAvailable>")
        if not count.isdigit() or int(count) <= 0:
            raise ValueError(f"--podcliques={value}: minAvailable must be a positive integer")
        found[name] = max(found.get(name, 0), int(count))
    if not found:
        raise ValueError("--podcliques is required (once per parent PodClique)")
    return found


def _ready(pod: Mapping[str, Any]) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@dataclass
class ParentWait:
    """Which parents are waited for (``required``) and which of their pods are Ready now."""

    required: dict[str, int]
    ready: dict[str, set[str]] = field(default_factory=dict)

    def relist(self, pods: Iterable[Mapping[str, Any]]) -> None:
        self.ready = {name: set() for name in self.required}
        for pod in pods:
            self.observe("ADDED", pod)

    def observe(self, event: str, pod: Mapping[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        parent = (meta.get("labels") or {}).get(LABEL_PODCLIQUE)
        if parent not in self.required:
            return
        pods = self.ready.setdefault(parent, set())
        if event != "DELETED" and _ready(pod):
            pods.add(meta.get("name", ""))
        else:
            pods.discard(meta.get("name", ""))

    def satisfied(self) -> bool:
        return all(len(self.ready.get(name, ())) >= count for name, count in self.required.items())

    def progress(self) -> str:
        return ",".join(
            f"{name}={len(self.ready.get(name, ()))}/{count}" for name, count in sorted(self.required.items())
        )


def wait_for_parents(
    source: PodSource, *, namespace: str, wait: ParentWait, stop: threading.Event, backoff: Backoff | None = None
) -> bool:
    """Block until ``wait`` is satisfied (True) or ``stop`` is set (False)."""
    backoff = backoff or Backoff(jitter=False)
    selector = f"{LABEL_PODCLIQUE} in ({','.join(sorted(wait.required))})"
    log.info("initc waiting namespace=%s parents=%s", namespace, wait.progress())
    while not stop.is_set():
        try:
            pods, version = source.list_pods(namespace, selector)
            wait.relist(pods)
            backoff.reset()
            log.info("initc listed pods=%d progress=%s", len(pods), wait.progress())
            if wait.satisfied():
                log.info("initc parents ready progress=%s", wait.progress())
                return True
            for event in source.watch_pods(namespace, selector, version):
                if stop.is_set():
                    return False
                kind, pod = event.get("type", ""), event.get("object") or {}
                before = wait.progress()
                wait.observe(kind, pod)
                if wait.progress() != before:
                    log.info("initc progress=%s", wait.progress())
                if wait.satisfied():
                    log.info("initc parents ready progress=%s", wait.progress())
                    return True
        except (ApiError, OSError, ValueError, HTTPError) as err:  # HTTPError: urllib3's cut-off watch stream
            if stop.is_set():
                return False
            delay = backoff.delay()
            status = err.status if isinstance(err, ApiError) else 0
            log.warning("initc api error status=%d error=%s retry_in=%.1fs", status, err, delay)
            stop.wait(delay)
    return False
