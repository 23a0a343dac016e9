"""What filter and bind answer, as a table: the store's facts about the pod and the member's view in, a decision out.

kube-scheduler's reaction to each answer is what matters (``decisions`` explains): ``Retry`` = Error (backoff
1-10 s, no binding cycle), ``Refuse`` = FailedNodes (parked until a cluster event, up to 5 min), ``Accept`` = the
one node (prioritize skipped), ``Replan`` = the coordinator plans first and asks again.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler.extender.coordinator.decisions import (
    VICTIMS_SEEN_LAG_SECONDS,
    Accept,
    BecomeReady,
    Done,
    Fail,
    Refuse,
    Replan,
    ReplanCause,
    Retry,
    decide_bind,
    decide_filter,
)
from scheduler.extender.coordinator.gang_state import GangState, GroupCount, MemberView, PodFacts

KEY = "default/g-w0"
UID = "uid-1"
KNOWN = PodFacts(known=True, uid=UID)
CANDIDATES = ["n0", "n1", "n2"]

# A member of gang default/g planned on n1; group w has 1 bound + 2 ready of minReplicas 8 (5 short).
PLANNED = MemberView(
    gang="default/g",
    state=GangState.PLANNED,
    refusal="",
    transient=False,
    stale=False,
    planned="n1",
    ready=None,
    bound=None,
    group="w",
    complete=False,
    counts=(GroupCount("w", bound=1, ready=2, min_replicas=8),),
)


def _filter(
    member: MemberView | None, *, pod: PodFacts = KNOWN, uid: str = UID, fits: bool = True, now: float = 0.0
) -> object:
    return decide_filter(
        key=KEY, request_uid=uid, pod=pod, member=member, candidates=CANDIDATES, fits=lambda n: fits, now=now
    )


@pytest.mark.parametrize(
    ("pod", "uid", "member", "fits", "expected"),
    [
        pytest.param(PodFacts(known=False), UID, PLANNED, True, Retry, id="unknown-pod-retries-not-parked"),
        pytest.param(PodFacts(True, "uid-other"), UID, PLANNED, True, Retry, id="uid-mismatch-retries"),
        pytest.param(KNOWN, "", PLANNED, True, Retry, id="request-without-uid"),
        pytest.param(PodFacts(True, UID, "n2"), UID, None, True, Accept("n2"), id="bound-per-store-gets-its-node"),
        pytest.param(PodFacts(True, UID, "n9"), UID, None, True, Refuse, id="bound-elsewhere-not-a-candidate"),
        pytest.param(KNOWN, UID, None, True, Replan(ReplanCause.UNPLANNED), id="no-record-plans"),
        pytest.param(KNOWN, UID, replace(PLANNED, bound="n0"), True, Accept("n0"), id="bound-by-us-watch-lags"),
        pytest.param(KNOWN, UID, replace(PLANNED, ready="n1"), True, Retry, id="ready-member-retries"),
        pytest.param(KNOWN, UID, PLANNED, True, Accept("n1"), id="planned-node"),
        pytest.param(
            KNOWN, UID, replace(PLANNED, planned="n7"), True, Replan(ReplanCause.NODE_REFUSED, "n7"), id="refused"
        ),
        pytest.param(KNOWN, UID, PLANNED, False, Replan(ReplanCause.CLUSTER_CHANGED, "n1"), id="node-lost-room"),
        pytest.param(
            KNOWN,
            UID,
            replace(PLANNED, planned=None, state=GangState.INFEASIBLE, refusal="needs 20 GPUs"),
            True,
            Refuse("needs 20 GPUs"),
            id="fresh-refusal-parks",
        ),
        pytest.param(
            KNOWN,
            UID,
            replace(PLANNED, planned=None, state=GangState.INFEASIBLE, refusal="needs 20 GPUs", stale=True),
            True,
            Replan(ReplanCause.STALE),
            id="stale-refusal-plans-again",
        ),
        pytest.param(
            KNOWN,
            UID,
            replace(PLANNED, planned=None, state=GangState.WAITING, refusal="PodGang not yet", transient=True),
            True,
            Retry("PodGang not yet"),
            id="transient-waiting-retries",
        ),
        pytest.param(
            KNOWN,
            UID,
            replace(PLANNED, planned=None, state=GangState.BOUND),
            True,
            Replan(ReplanCause.EXTRA),
            id="extra",
        ),
        pytest.param(
            KNOWN, UID, replace(PLANNED, planned=None, state=GangState.RELEASING), True, Retry, id="releasing"
        ),
        pytest.param(KNOWN, UID, replace(PLANNED, planned=None), True, Replan(ReplanCause.UNPLANNED), id="new-member"),
        # Preempting: victims still on the planned node. kube-scheduler leaves the node out (its filters count the
        # victims): parked, not re-planned elsewhere (that would evict again). It offers the node while our watch
        # still shows them (kube-scheduler saw them go first): retried in a second. Our capacity check says the node
        # is full meanwhile (fits False): still no re-plan.
        pytest.param(
            KNOWN, UID, replace(PLANNED, planned="n7", awaiting=("ns/v0",)), False, Refuse, id="awaiting-victims"
        ),
        pytest.param(
            KNOWN, UID, replace(PLANNED, awaiting=("ns/v0",)), False, Retry, id="awaiting-victims-node-offered"
        ),
    ],
)
def test_filter_decisions(pod: PodFacts, uid: str, member: MemberView | None, fits: bool, expected: object) -> None:
    decision = _filter(member, pod=pod, uid=uid, fits=fits)
    if isinstance(expected, type):
        assert isinstance(decision, expected), decision
    else:
        assert decision == expected


@pytest.mark.parametrize(
    ("seconds_since", "expected"),
    [
        pytest.param(1.0, Retry, id="moments-after-kube-scheduler-has-yet-to-see-them-go"),
        pytest.param(VICTIMS_SEEN_LAG_SECONDS + 1, Replan, id="long-after-the-refusal-is-the-nodes"),
    ],
)
def test_a_node_the_victims_just_left_refused_by_kube_scheduler_is_retried_not_replanned(
    seconds_since: float, expected: type
) -> None:
    """Our store sees the victims go before kube-scheduler's cache does, which meanwhile finds no room on the node:
    a re-plan on that refusal would give the preemption up with victims elsewhere still to evict."""
    vacated = replace(PLANNED, planned="n7", vacated_at=100.0)
    decision = _filter(vacated, now=100.0 + seconds_since)
    assert isinstance(decision, expected), decision
    if isinstance(decision, Replan):
        assert decision == Replan(ReplanCause.NODE_REFUSED, "n7")


def test_a_member_waiting_for_victims_is_told_which() -> None:
    decision = _filter(replace(PLANNED, planned="n7", awaiting=("ns/v0", "ns/v1")), fits=False)
    assert isinstance(decision, Refuse)
    assert "2 pod(s) evicted for it still on n7 (ns/v0, ns/v1)" in decision.reason


def test_a_ready_member_is_told_what_its_gang_still_waits_for() -> None:
    decision = _filter(replace(PLANNED, ready="n1"))
    # 1 bound + 2 ready of 8: 5 more are needed.
    assert isinstance(decision, Retry)
    assert decision.reason == (
        "pod default/g-w0 is ready on n1; gang default/g waits for 5 more: group w 3 of 8; "
        "grove-extender binds it when the gang is complete"
    )


@pytest.mark.parametrize(
    ("pod", "uid", "member", "node", "expected"),
    [
        pytest.param(PodFacts(known=False), UID, PLANNED, "n1", Fail, id="unknown-pod"),
        pytest.param(PodFacts(True, "uid-other"), UID, PLANNED, "n1", Fail, id="uid-mismatch"),
        pytest.param(PodFacts(True, UID, "n1"), UID, None, "n1", Done(), id="already-bound-there"),
        pytest.param(PodFacts(True, UID, "n2"), UID, None, "n1", Fail, id="bound-elsewhere"),
        pytest.param(KNOWN, UID, replace(PLANNED, bound="n1"), "n1", Done(), id="bound-by-us-watch-lags"),
        pytest.param(KNOWN, UID, None, "n1", Fail, id="no-plan-after-restart"),
        pytest.param(KNOWN, UID, PLANNED, "n2", Fail, id="not-the-planned-node"),
        pytest.param(KNOWN, UID, PLANNED, "n1", BecomeReady("n1"), id="planned-node-becomes-ready"),
        pytest.param(KNOWN, UID, replace(PLANNED, ready="n1"), "n1", BecomeReady("n1"), id="ready-again"),
        pytest.param(KNOWN, UID, replace(PLANNED, planned=None, refusal="no room"), "n1", Fail, id="unplanned"),
    ],
)
def test_bind_decisions(pod: PodFacts, uid: str, member: MemberView | None, node: str, expected: object) -> None:
    decision = decide_bind(key=KEY, request_uid=uid, node=node, pod=pod, member=member)
    if isinstance(expected, type):
        assert isinstance(decision, expected), decision
    else:
        assert decision == expected
