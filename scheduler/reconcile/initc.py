"""``grove-initc``: wait until every parent PodClique has ``minAvailable`` Ready pods, then let the pod start.

Grove's init container (``operator/initc``) takes ``--podcliques=<parentFQN>:<minAvailable>`` once per parent,
watches pods, and exits when each parent has enough Ready pods. This is ours, run as ``grove-extender initc``: one
informer (``scheduler.kube.informer``) on the parents' pods (label ``grove.io/podclique in (…)``), which relists on
410 Gone and retries any error after a bounded exponential backoff (0.5 s doubling to 30 s, unjittered). A stop
(SIGTERM) ends the wait at once. The state is a pure class (``ParentWait``) that the informer's handler feeds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import ApiClient

from api.grove import LABEL_PODCLIQUE
from scheduler.kube.backoff import Backoff
from scheduler.kube.decoding import EventType, JsonDecoder
from scheduler.kube.informer import Informer, start_informers
from scheduler.kube.listing import ALL_PODS

__all__ = ["ParentWait", "parse_podcliques", "wait_for_parents"]

log = logging.getLogger(__name__)
_JOIN_SECONDS = 10.0


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


class _Progress:
    """The informer's handler: feeds ``wait`` and sets ``done`` once it is satisfied."""

    def __init__(self, wait: ParentWait, done: threading.Event) -> None:
        self._wait = wait
        self._done = done

    def on_list(self, pods: Sequence[Mapping[str, Any]]) -> None:
        self._wait.relist(pods)
        log.info("initc listed pods=%d progress=%s", len(pods), self._wait.progress())
        self._check()

    def on_event(self, event_type: EventType, pod: Mapping[str, Any]) -> None:
        before = self._wait.progress()
        self._wait.observe(event_type, pod)
        if self._wait.progress() != before:
            log.info("initc progress=%s", self._wait.progress())
        self._check()

    def _check(self) -> None:
        if self._wait.satisfied() and not self._done.is_set():
            log.info("initc parents ready progress=%s", self._wait.progress())
            self._done.set()


def wait_for_parents(
    api_client: ApiClient,
    *,
    namespace: str,
    wait: ParentWait,
    stop: threading.Event,
    backoff: Backoff | None = None,
) -> bool:
    """Block until ``wait`` is satisfied (True) or ``stop`` is set first (False). ``stop`` is set on return either
    way: it is what ends the informer."""
    selector = f"{LABEL_PODCLIQUE} in ({','.join(sorted(wait.required))})"
    informer = Informer(
        api_client=api_client,
        resource=ALL_PODS,
        decoder=JsonDecoder(stamp=ALL_PODS.stamp),
        namespace=namespace,
        label_selector=selector,
        backoff=backoff or Backoff(jitter=False),
    )
    informer.add_handler(_Progress(wait, stop))
    log.info("initc waiting namespace=%s parents=%s", namespace, wait.progress())
    threads = start_informers([informer], stop)
    stop.wait()
    for thread in threads:
        thread.join(timeout=_JOIN_SECONDS)
    return wait.satisfied()
