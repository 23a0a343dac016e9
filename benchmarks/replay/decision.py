"""The one seam between the replay and the product: a ``DecisionStep`` decides which pending pods of a gang bind
where. The engine owns time and capacity; the step owns placement."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from placement.request import GangRequest

if TYPE_CHECKING:
    from benchmarks.replay.workload import ReplayGang

Free = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class Decision:
    """Pods to bind now (pod key → node). ``placement_score`` is the policy's score of this placement, if any."""

    bind: Mapping[str, str] = field(default_factory=dict)
    placement_score: float | None = None
    reason: str = ""


@runtime_checkable
class DecisionStep(Protocol):
    """How one policy places gangs during a replay.

    ``all_or_nothing`` is True when the policy binds a gang's guaranteed pods together or not at all; False for
    pod-by-pod policies (kube-scheduler without gang semantics), whose partial binds the engine keeps and holds.
    The engine calls ``arrived`` once per gang at its arrival, ``decide`` whenever the gang may now fit (with only
    its still-unbound pods in ``remaining`` and ``minReplicas`` lowered by those already bound), and ``completed``
    when it finishes. ``decide`` must not assume its binds are applied until it returns; the engine checks every
    bind against capacity and fails the replay on any overcommit. When the replay preempts, ``evicted`` says which
    bound pods of a running gang were evicted; a gang evicted whole is back in the queue, and ``arrived`` is
    called for it again.
    """

    all_or_nothing: bool

    def arrived(self, gang: ReplayGang) -> None: ...

    def decide(self, gang: ReplayGang, remaining: GangRequest, free: Free) -> Decision: ...

    def evicted(self, gang: ReplayGang, pods: Collection[str]) -> None: ...

    def completed(self, gang: ReplayGang) -> None: ...


@runtime_checkable
class BatchDecisionStep(Protocol):
    """A policy that plans several waiting gangs together (queue-aware planning); always all-or-nothing.

    The engine calls ``arrived`` and ``completed`` as for :class:`DecisionStep`, and instead of ``decide`` per
    gang, ``decide_batch`` with the gangs it would try now (in arrival order, each with only its still-unbound
    pods) and the free capacity; the answer maps gang keys to decisions, for the gangs the step starts. The
    engine checks every bind against capacity, as for single decisions.
    """

    all_or_nothing: bool

    def arrived(self, gang: ReplayGang) -> None: ...

    def decide_batch(
        self, gangs: Sequence[tuple[ReplayGang, GangRequest]], free: Free
    ) -> tuple[Mapping[str, Decision], Sequence[str]]:
        """Decisions for the gangs that start, and the keys of every gang the step considered (the rest are
        left for another call)."""
        ...

    def evicted(self, gang: ReplayGang, pods: Collection[str]) -> None: ...

    def completed(self, gang: ReplayGang) -> None: ...
