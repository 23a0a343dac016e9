"""Which pods the store keeps whole, and what it keeps of the others.

The extender decides for its own pods (``schedulerName`` one of its names) and for members of Grove gangs (label
``grove.io/podgang``, whoever schedules them: a gang is protected from preemption as a whole). Every other pod in
the cluster — on a shared cluster, nearly all of them — matters only as capacity: the node it holds, its summed
requests, its phase, and its going away. A full ``Pod`` model of each made 100,000 such pods most of the extender's
memory; a ``ForeignPod`` keeps only what the capacity needs (``benchmarks/bench_watch.py`` measures the store's
memory per pod; figures in docs/bench_watch.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from api.core import Pod, ResourceVector
from api.grove import LABEL_PODGANG

__all__ = ["DEFAULT_SCHEDULER_NAMES", "ForeignPod", "OurPods"]

DEFAULT_SCHEDULER_NAMES = frozenset({"grove"})
"""The kube-scheduler profile of ``deploy/base/grove-scheduler.yaml``."""

_TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True)
class OurPods:
    """The rule: a pod is ours (kept whole) if a scheduler of ours places it or it belongs to a gang."""

    scheduler_names: frozenset[str] = DEFAULT_SCHEDULER_NAMES

    def include(self, *, labels: Mapping[str, str] | None, scheduler_name: str) -> bool:
        return scheduler_name in self.scheduler_names or bool(labels and labels.get(LABEL_PODGANG))

    def include_pod(self, pod: Pod) -> bool:
        return self.include(labels=pod.metadata.labels, scheduler_name=pod.spec.schedulerName)

    def offered(self, pod: Pod) -> bool:
        """Whether kube-scheduler's profile of ours will offer the pod to the extender (its ``schedulerName``). A
        gang member another scheduler places is kept whole (its gang is protected) but never planned for."""
        return pod.spec.schedulerName in self.scheduler_names


@dataclass(frozen=True, slots=True)
class ForeignPod:
    """A pod another scheduler places, as capacity. ``requests`` is ``Pod.requests()`` of the pod (often one
    object shared by many pods with equal requests: never mutate it); ``node`` is empty while it is pending.
    ``uid``, ``priority`` (``spec.priority``, 0 when unset) and ``deleting`` (a ``deletionTimestamp``): what a gang
    of higher priority needs to choose it as a victim and evict it (and not count it twice while it terminates)."""

    namespace: str
    name: str
    node: str
    phase: str
    requests: ResourceVector
    uid: str = ""
    priority: int = 0
    deleting: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        return self.phase in _TERMINAL

    @classmethod
    def of(cls, pod: Pod, requests: ResourceVector) -> ForeignPod:
        meta = pod.metadata
        return cls(
            meta.namespace,
            meta.name,
            pod.spec.nodeName,
            pod.status.phase,
            requests,
            uid=meta.uid,
            priority=pod.spec.priority or 0,
            deleting=meta.deletionTimestamp is not None,
        )
