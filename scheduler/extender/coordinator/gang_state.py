"""What a gang's state is made of, and the immutable views that go in and out of ``GangTable``: what decisions,
plans, the release and reports read, and what a plan commits.

The lifecycle state is derived from the record's facts, never stored beside them (a stored state and the facts it
summarises could disagree): see ``GangRecord.state`` and the diagram in ``gang_table``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from api.core import ResourceVector
from scheduler.extender.coordinator.members import GangRef
from scheduler.extender.state.store import ClusterStore

__all__ = [
    "GangRecord",
    "GangState",
    "GangSummary",
    "GroupCount",
    "MemberView",
    "NominationBasis",
    "PlanBasis",
    "PlanCommit",
    "PlanStatus",
    "PodFacts",
    "ReadyMember",
    "ReleaseBatch",
]


class GangState(StrEnum):
    WAITING = "Waiting"  # guaranteed pods missing or gated, or the PodGang does not exist yet
    INFEASIBLE = "Infeasible"  # no placement for the members still to place (the reason says why)
    PLANNED = "Planned"  # reservations held; members are filtered and become ready one by one
    PREEMPTING = "Preempting"  # planned on capacity that lower-priority pods still hold: waiting for them to go
    RELEASING = "Releasing"  # the guarantee is met: the extender is binding the ready members
    BOUND = "Bound"  # every group has minReplicas members bound (best-effort extras may follow)
    PARTIALLY_BOUND = "PartiallyBound"  # some members bound, some group below minReplicas: being repaired


class PlanStatus(StrEnum):
    """What the last plan of the members still to place said."""

    WAITING = "Waiting"
    INFEASIBLE = "Infeasible"
    PLANNED = "Planned"


@dataclass(frozen=True)
class ReadyMember:
    """A member whose bind call for its planned node arrived: kube-scheduler's Reserve/PreBind ran for it."""

    node: str
    uid: str


@dataclass(frozen=True)
class GroupCount:
    group: str
    bound: int
    ready: int
    min_replicas: int

    @property
    def short(self) -> bool:
        return self.bound + self.ready < self.min_replicas


@dataclass
class GangRecord:
    """One gang's facts. Only ``GangTable`` holds and changes these; everyone else sees frozen views."""

    ref: GangRef
    plan_status: PlanStatus
    refusal: str = ""  # why the members still to place cannot be placed now ("" when planned)
    transient: bool = False  # the refusal will pass by itself (our watch has not shown the PodGang yet)
    gathering: bool = False  # Waiting for its own members (missing or gated): no room made for it would help
    decided: tuple[int, int, int] | None = None  # (structure, news, capacity epoch) of the last decision
    min_replicas: dict[str, int] = field(default_factory=dict)  # group → minReplicas
    groups: dict[str, str] = field(default_factory=dict)  # pod → group, every member known at the last plan
    plan: dict[str, str] = field(default_factory=dict)  # pod → node, members planned and not bound yet
    ready: dict[str, ReadyMember] = field(default_factory=dict)
    bound: dict[str, str] = field(default_factory=dict)  # pod → node: facts (the store's, or our own bind's)
    binding: set[str] = field(default_factory=set)  # ready members whose bind is in flight
    releasing: bool = False
    excluded: dict[str, dict[str, float]] = field(default_factory=dict)  # group → node → until (kube refused)
    awaiting: dict[str, str] = field(default_factory=dict)  # pod → node: pods the plan needs gone (its victims)
    vacated: dict[str, float] = field(default_factory=dict)  # node → when the plan's last victim on it went
    placement_score: float | None = None
    structure: int = 0  # grows when a member loses its place (gone, readiness dropped): older plans do not apply
    news: int = 0  # grows when a member appears or changes, or the PodGang changes: decisions may be outdated
    bound_per_group: dict[str, int] = field(default_factory=dict)
    ready_per_group: dict[str, int] = field(default_factory=dict)
    replans: int = 0  # grows whenever members are planned anew or lose their plan (not when they bind)

    @property
    def key(self) -> str:
        return self.ref.key

    @property
    def whole(self) -> bool:
        return bool(self.min_replicas) and all(
            self.bound_per_group.get(group, 0) >= minimum for group, minimum in self.min_replicas.items()
        )

    @property
    def complete(self) -> bool:
        """Every group has minReplicas members bound or ready: the extender may bind the ready ones."""
        return bool(self.min_replicas) and all(
            self.bound_per_group.get(group, 0) + self.ready_per_group.get(group, 0) >= minimum
            for group, minimum in self.min_replicas.items()
        )

    @property
    def state(self) -> GangState:
        if self.releasing:
            return GangState.RELEASING
        if self.whole:
            return GangState.BOUND
        if self.bound:
            return GangState.PARTIALLY_BOUND
        if self.awaiting and self.plan_status is PlanStatus.PLANNED:
            return GangState.PREEMPTING
        return GangState(self.plan_status.value)

    def counts(self) -> tuple[GroupCount, ...]:
        return tuple(
            GroupCount(group, self.bound_per_group.get(group, 0), self.ready_per_group.get(group, 0), minimum)
            for group, minimum in self.min_replicas.items()
        )

    # --- the only writers of the membership maps, so the per-group tallies never drift ---------------------------

    def set_ready(self, pod: str, member: ReadyMember) -> None:
        if pod not in self.ready:
            _bump(self.ready_per_group, self.groups.get(pod, ""), 1)
        self.ready[pod] = member

    def unset_ready(self, pod: str) -> ReadyMember | None:
        member = self.ready.pop(pod, None)
        if member is not None:
            _bump(self.ready_per_group, self.groups.get(pod, ""), -1)
            self.binding.discard(pod)
        return member

    def set_bound(self, pod: str, node: str) -> None:
        self.unset_ready(pod)
        self.plan.pop(pod, None)
        if pod not in self.bound:
            _bump(self.bound_per_group, self.groups.get(pod, ""), 1)
        self.bound[pod] = node

    def unset_bound(self, pod: str) -> None:
        if self.bound.pop(pod, None) is not None:
            _bump(self.bound_per_group, self.groups.get(pod, ""), -1)

    def set_groups(self, groups: Mapping[str, str], min_replicas: Mapping[str, int]) -> None:
        """A new plan's membership: re-tally what is ready and bound under it."""
        self.groups = dict(groups)
        self.min_replicas = dict(min_replicas)
        self.ready_per_group, self.bound_per_group = {}, {}
        for pod in self.ready:
            _bump(self.ready_per_group, self.groups.get(pod, ""), 1)
        for pod in self.bound:
            _bump(self.bound_per_group, self.groups.get(pod, ""), 1)

    def describe(self, *, now: float, reserved_since: float | None) -> dict[str, Any]:
        return {
            "gang": self.key,
            "state": str(self.state),
            "groups": [
                {"name": c.group, "bound": c.bound, "ready": c.ready, "minReplicas": c.min_replicas}
                for c in self.counts()
            ],
            "plan": dict(self.plan),
            "ready": sorted(self.ready),
            "awaiting": dict(sorted(self.awaiting.items())),
            "placementScore": self.placement_score,
            "reservationAgeSeconds": round(now - reserved_since, 3) if reserved_since is not None else None,
            "reason": self.refusal,
        }


def _bump(tally: dict[str, int], group: str, delta: int) -> None:
    left = tally.get(group, 0) + delta
    if left:
        tally[group] = left
    else:
        tally.pop(group, None)


@dataclass(frozen=True)
class MemberView:
    """What filter and bind need to know about one member and its gang, copied out under the table's lock."""

    gang: str
    state: GangState
    refusal: str  # why it cannot be placed now, when it has no planned node
    transient: bool  # the refusal will pass by itself: kube-scheduler should retry soon, not park the pod
    stale: bool  # the refusal was decided on members or capacity that changed since: plan again first
    planned: str | None
    ready: str | None
    bound: str | None
    group: str | None
    complete: bool
    counts: tuple[GroupCount, ...]
    awaiting: tuple[str, ...] = ()  # pods still to go from the planned node before the member can go there
    vacated_at: float | None = None  # when the plan's victims left the planned node (None: it had none)


@dataclass(frozen=True)
class GangSummary:
    """A gang as the status reporter sees it."""

    ref: GangRef
    state: GangState
    reason: str
    counts: tuple[GroupCount, ...]
    placement_score: float | None
    gathering: bool = False  # Waiting for its own members: no room made for it would help


@dataclass(frozen=True)
class PodFacts:
    """What the store says about a pod right now (``known`` False: not in the store, or finished)."""

    known: bool
    uid: str = ""
    node_name: str = ""

    @classmethod
    def of(cls, store: ClusterStore, key: str) -> PodFacts:
        """The pod's facts as the store holds them: a read on filter's and bind's path."""
        pod = store.pod(key)
        if pod is None or pod.terminal:
            return cls(known=False)
        return cls(known=True, uid=pod.metadata.uid, node_name=pod.spec.nodeName)


@dataclass(frozen=True)
class NominationBasis:
    """A gang's plan as the nominator reads it: pod → planned node (bound members left out), the members whose bind
    call arrived (kube-scheduler is done with them) and the bound ones (ours or the store's: nothing to undo)."""

    plan: Mapping[str, str]
    ready: frozenset[str]
    bound: frozenset[str]


@dataclass(frozen=True)
class PlanBasis:
    """What a plan starts from, copied out of the table; ``planned`` refuses a commit the gang has moved past."""

    exists: bool
    fresh: bool  # the gang's current decision still holds: nothing to do unless forced
    structure: int
    news: int
    epoch: int
    plans: int  # grows with every plan committed (capacity taken by some gang's reservations)
    plan: Mapping[str, str]
    ready: Mapping[str, str]
    bound: Mapping[str, str]
    excluded: Mapping[str, frozenset[str]]
    reserved_elsewhere: Mapping[str, ResourceVector]  # other gangs' reservations per node
    held: Mapping[str, ResourceVector]  # this gang's reservations: pod → demand


@dataclass(frozen=True)
class PlanCommit:
    assignment: Mapping[str, str]  # pods placed by this plan
    kept: Mapping[str, str]  # pods that keep the node they had (ready, or planned and still fine)
    demands: Mapping[str, ResourceVector]
    groups: Mapping[str, str]
    min_replicas: Mapping[str, int]
    bound: Mapping[str, str]  # bound members as the planner saw them
    placement_score: float | None
    ttl_seconds: float


@dataclass(frozen=True)
class ReleaseBatch:
    members: tuple[tuple[str, ReadyMember], ...]  # pod, (node, uid): bind these now
    lost: tuple[str, ...] = ()  # ready members dropped (gone, or their node no longer fits): to re-plan
