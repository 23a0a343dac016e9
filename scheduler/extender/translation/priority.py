"""A gang's priority: what orders the queue, which reservation gives way to which, and who may evict whom.

Grove carries a workload's priority on its PodGang (``spec.priorityClassName``, from the PodCliqueSet's
``template.priorityClassName``) and does not copy it into the pods, so the pods of a Grove gang usually carry
priority 0 (or the cluster's default class's). One rule, used by every entry point:

1. the PodGang names a class that exists: its ``value`` and ``preemptionPolicy``;
2. else the highest ``spec.priority`` among the gang's pods, with that pod's ``preemptionPolicy`` (the API
   server's admission filled both from the pod's own class, or from the default class, when it created the pod);
3. else, when no pod carries a priority (a snapshot written by hand, pods created without admission), the class
   marked ``globalDefault``, as kube-apiserver's admission would have given them; else 0.

A class named on the PodGang that does not exist falls through to 2 and 3, and says so in ``source``: refusing the
gang would stop a workload for a typo, and kube-apiserver refuses a pod naming a missing class only at its creation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from api.core import PREEMPT_NEVER, Pod, PriorityClass
from api.grove import PodGang

__all__ = ["NO_CLASSES", "GangPriority", "PriorityClasses", "gang_priority", "pod_priority"]


class PriorityClasses(Protocol):
    """The cluster's PriorityClasses, as the extender's store or a snapshot holds them."""

    def priority_class(self, name: str) -> PriorityClass | None:
        """The class of that name, if the cluster has it."""

    def default_priority_class(self) -> PriorityClass | None:
        """The class marked ``globalDefault``, if any."""


class _NoClasses:
    def priority_class(self, name: str) -> PriorityClass | None:
        return None

    def default_priority_class(self) -> PriorityClass | None:
        return None


NO_CLASSES: PriorityClasses = _NoClasses()
"""A cluster with no PriorityClass objects: gangs take their pods' priorities, else 0."""


@dataclass(frozen=True)
class GangPriority:
    """``value`` orders gangs (higher first); ``preempts`` is False for ``preemptionPolicy: Never`` (the gang
    still goes ahead of lower ones in the queue and takes their reservations, but evicts nothing); ``source`` says
    where the value came from, for messages."""

    value: int = 0
    preempts: bool = True
    source: str = "no priority set (0)"


def gang_priority(podgang: PodGang | None, pods: Iterable[Pod], classes: PriorityClasses) -> GangPriority:
    """The rule of the module docstring, for a PodGang (``None``: a pod of no gang) and its pods."""
    missing = ""
    name = podgang.spec.priorityClassName if podgang is not None else None
    if name:
        found = classes.priority_class(name)
        if found is not None:
            return _of_class(found, f"PriorityClass {name}")
        missing = f"PriorityClass {name} (on PodGang {podgang.key if podgang else ''}) does not exist; "
    best: Pod | None = None
    for pod in pods:
        if pod.spec.priority is not None and (best is None or pod.spec.priority > (best.spec.priority or 0)):
            best = pod
    if best is not None:
        value = best.spec.priority or 0
        return GangPriority(value, best.spec.preemptionPolicy != PREEMPT_NEVER, f"{missing}pod priority {value}")
    default = classes.default_priority_class()
    if default is not None:
        return _of_class(default, f"{missing}default PriorityClass {default.name}")
    return GangPriority(0, True, f"{missing}no priority set (0)")


def pod_priority(pod: Pod, classes: PriorityClasses) -> int:
    """A pod's own priority, as kube-scheduler reads it (``spec.priority``), else the default class's, else 0."""
    if pod.spec.priority is not None:
        return pod.spec.priority
    default = classes.default_priority_class()
    return default.value if default is not None else 0


def _of_class(found: PriorityClass, source: str) -> GangPriority:
    return GangPriority(found.value, found.preemptionPolicy != PREEMPT_NEVER, f"{source} ({found.value})")
