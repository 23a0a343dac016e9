"""What filter and bind answer: pure functions of what the store says about the pod and of the member's view.

No state is read or written here; the coordinator turns a ``Replan`` or ``BecomeReady`` into a transition and
asks again. kube-scheduler's reactions decide the vocabulary:

- ``Accept`` → the node, alone (kube-scheduler then skips prioritize).
- ``Refuse`` → ``FailedNodes``: the pod is unschedulable now. kube-scheduler parks it until a cluster event (a
  pod deleted, a node changed, a failed binding) or 5 minutes pass, and may try preemption for it.
- ``Retry`` → ``Error``: a passing condition (our watch lags, the member is ready and its gang still gathering).
  kube-scheduler backs the pod off for 1 s, 2 s, … 10 s and tries again, with no binding cycle.
- ``Replan`` → the member has no usable plan: the coordinator re-plans it, then decides again.

A member of a Preempting gang is refused on its planned node until the pods evicted for it are gone: a re-plan
there would look elsewhere and evict again.

A ready member is answered ``Retry`` rather than its node. Its node again would make kube-scheduler assume it, run
Reserve/PreBind again and send a bind that can only wait again, and every bind answered ``Error`` makes
kube-scheduler forget the assumed pod, which it treats as a pod deletion and wakes every parked pod in the cluster;
``Retry`` costs one scheduling cycle and nothing else. Both answers were measured on the simulator
(``benchmarks/bench_lifecycle.py``), with members held back by kube-scheduler's own filters so that the ready ones
keep coming back: the gangs bind whole as soon either way, in about as many cycles, but the node answer multiplies
the bind calls. Parking ready members (``FailedNodes``) was measured too: no faster — the cluster event that lets the
held members through wakes the parked ones as well — and it would give up the 10 s retry that brings them back after
an extender restart (a parked pod waits for an event, or 5 minutes). Figures in docs/bench_lifecycle.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from scheduler.extender.coordinator.gang_state import GangState, MemberView, PodFacts

__all__ = [
    "Accept",
    "BecomeReady",
    "BindDecision",
    "Done",
    "Fail",
    "FilterDecision",
    "Refuse",
    "Replan",
    "ReplanCause",
    "Retry",
    "decide_bind",
    "decide_filter",
    "ready_message",
]


@dataclass(frozen=True)
class Accept:
    node: str


@dataclass(frozen=True)
class Refuse:
    reason: str


@dataclass(frozen=True)
class Retry:
    reason: str


VICTIMS_SEEN_LAG_SECONDS = 10.0
"""How long after a preemption's victims left a node kube-scheduler's refusal of it is put down to its cache not
having seen them go yet (its retries back off from 1 s, so it asks a few times within this)."""


class ReplanCause(StrEnum):
    UNPLANNED = "unplanned"  # no plan yet, or the member has no place in it
    STALE = "stale"  # a refusal decided on members or capacity that changed since
    EXTRA = "extra"  # a best-effort member of a gang that already stands
    NODE_REFUSED = "node_refused"  # kube-scheduler's own filters dropped the planned node
    CLUSTER_CHANGED = "cluster_changed"  # the planned node no longer has room (a foreign pod bound there)


@dataclass(frozen=True)
class Replan:
    cause: ReplanCause
    node: str | None = None  # the planned node that failed, for NODE_REFUSED and CLUSTER_CHANGED


FilterDecision = Accept | Refuse | Retry | Replan


@dataclass(frozen=True)
class Done:
    """The bind already happened (per the store, or per our own release the watch has not shown yet)."""


@dataclass(frozen=True)
class Fail:
    reason: str


@dataclass(frozen=True)
class BecomeReady:
    node: str


BindDecision = Done | Fail | BecomeReady


def decide_filter(
    *, key: str, request_uid: str, pod: PodFacts, member: MemberView | None, candidates: Sequence[str],
    fits: Callable[[str], bool], nominated: str = "", now: float = 0.0,
) -> FilterDecision:  # fmt: skip
    """``fits(node)``: bound pods + reservations on the node within its allocatable (asked only when needed).
    ``nominated``: the pod's ``status.nominatedNodeName`` as kube-scheduler sent it; ``now``: the coordinator's
    clock, against the member's ``vacated_at``."""
    unknown = _unknown(key, request_uid, pod)
    if unknown:
        return Retry(unknown)
    if pod.node_name:
        return _already_bound(key, pod.node_name, candidates)
    if member is None:
        return Replan(ReplanCause.UNPLANNED)
    if member.bound:
        return _already_bound(key, member.bound, candidates)
    if member.ready:
        return Retry(ready_message(key, member))
    node = member.planned
    if node is not None and member.awaiting:
        return _awaiting(key, member, node, candidates)
    if node is None:
        if member.state is GangState.RELEASING:
            return Retry(f"gang {member.gang} is being bound; {key} will be planned after")
        if member.state is GangState.BOUND:
            return Replan(ReplanCause.EXTRA)
        if member.refusal and not member.stale:
            return Retry(member.refusal) if member.transient else Refuse(member.refusal)
        return Replan(ReplanCause.STALE if member.refusal else ReplanCause.UNPLANNED)
    if node not in candidates:
        if nominated and nominated != node and list(candidates) == [nominated]:
            # kube-scheduler is trying the pod's nominated node alone (``evaluateNominatedNode``): a nomination
            # older than the plan, or kube-scheduler's own after a preemption. Not a refusal of the planned node.
            # An Error makes it go on to every node in the same cycle (and, should all its filters have left only
            # this node, clear the nomination and back the pod off), so the planned node is offered next.
            return Retry(f"pod {key} is planned on {node}, not on its nominated node {nominated}; retry")
        if member.vacated_at is not None and now - member.vacated_at < VICTIMS_SEEN_LAG_SECONDS:
            # The victims left the node moments ago in our store; kube-scheduler's own cache hears it a little
            # later and meanwhile finds no room there. Re-planning on that refusal would give the preemption up
            # while victims elsewhere are still being evicted for it.
            return Retry(f"the pods evicted for gang {member.gang} have left {node}; kube-scheduler has yet to see it")
        return Replan(ReplanCause.NODE_REFUSED, node)
    if not fits(node):
        return Replan(ReplanCause.CLUSTER_CHANGED, node)
    return Accept(node)


def decide_bind(*, key: str, request_uid: str, node: str, pod: PodFacts, member: MemberView | None) -> BindDecision:
    unknown = _unknown(key, request_uid, pod)
    if unknown:
        return Fail(unknown)
    bound = pod.node_name or (member.bound if member else None)
    if bound:
        return Done() if bound == node else Fail(f"pod {key} is already bound to {bound}")
    if member is None:
        return Fail(f"pod {key} has no plan (grove-extender may have restarted); it will be re-planned")
    planned = member.planned
    if planned is None:
        return Fail(member.refusal or f"gang {member.gang}: pod {key} has no place in the current plan")
    if planned != node:
        return Fail(f"pod {key} is planned on {planned}, not {node}; it will be re-planned")
    return BecomeReady(node)


def ready_message(key: str, member: MemberView) -> str:
    """Why a ready member's bind or filter is answered Error, and that nobody needs to act."""
    short = [c for c in member.counts if c.short]
    missing = sum(c.min_replicas - c.bound - c.ready for c in short)
    groups = ", ".join(f"group {c.group} {c.bound + c.ready} of {c.min_replicas}" for c in short)
    if not short:
        return f"pod {key} is ready on {member.ready}; gang {member.gang} is complete and being bound"
    return (
        f"pod {key} is ready on {member.ready}; gang {member.gang} waits for {missing} more: {groups}; "
        "grove-extender binds it when the gang is complete"
    )


def _awaiting(key: str, member: MemberView, node: str, candidates: Sequence[str]) -> FilterDecision:
    """The member's planned node is still held by pods evicted for its gang (or already terminating). Not a
    refusal of the node by kube-scheduler (a re-plan would look elsewhere and evict again): the pod waits, parked
    until a pod deletion wakes it, or, once kube-scheduler's own view shows the node free before our watch does,
    retried in a second."""
    names = ", ".join(member.awaiting[:3]) + (", …" if len(member.awaiting) > 3 else "")
    waiting = f"gang {member.gang} preempts: {len(member.awaiting)} pod(s) evicted for it still on {node} ({names})"
    if node in candidates:
        return Retry(f"{waiting}; pod {key} goes there once grove-extender sees them gone; retry")
    return Refuse(f"{waiting}; pod {key} goes there once they are gone")


def _unknown(key: str, request_uid: str, pod: PodFacts) -> str:
    if not pod.known:
        return f"pod {key} is not known to grove-extender yet (its watch may lag kube-scheduler's); retry"
    if request_uid and pod.uid and request_uid != pod.uid:
        return f"pod {key} with UID {request_uid} is not the one grove-extender knows (UID {pod.uid}); retry"
    if not request_uid:
        return f"pod {key}: the request carries no UID; grove-extender only acts on pods it can identify"
    return ""


def _already_bound(key: str, node: str, candidates: Sequence[str]) -> FilterDecision:
    if node in candidates:
        return Accept(node)
    return Refuse(f"pod {key} is already bound to {node}")
