"""``GangTable``'s transitions on their own: what each does to the state, the reservations and the listeners."""

from __future__ import annotations

from scheduler.extender.coordinator.gang_state import GangState, PlanCommit, PodFacts, ReadyMember
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangRef

GPU = "nvidia.com/gpu"
REF = GangRef("default", "g")
PODS = [f"default/g-w{i}" for i in range(3)]


def _commit(*, minimum: int = 3, nodes: tuple[str, ...] = ("n0", "n0", "n1")) -> PlanCommit:
    return PlanCommit(
        assignment=dict(zip(PODS, nodes, strict=True)),
        kept={},
        demands={pod: {GPU: 4} for pod in PODS},
        groups=dict.fromkeys(PODS, "w"),
        min_replicas={"w": minimum},
        bound={},
        placement_score=1.0,
        ttl_seconds=60.0,
    )


def _planned(table: GangTable, *, minimum: int = 3, nodes: tuple[str, ...] = ("n0", "n0", "n1")) -> None:
    basis = table.planning_basis(REF, now=0.0)
    assert table.planned(REF, commit=_commit(minimum=minimum, nodes=nodes), basis=basis, now=0.0)


def _ready(table: GangTable, pod: str, node: str) -> bool:
    view = table.member_ready(REF.key, pod, member=ReadyMember(node, f"uid-{pod}"), expires_at=100.0)
    assert view is not None
    return view.complete


def _held(table: GangTable) -> set[str]:
    """The members holding a reservation, as the next plan sees them."""
    return set(table.planning_basis(REF, now=0.0).held)


def _known(pod: str) -> PodFacts:
    return PodFacts(known=True, uid=f"uid-{pod}")


def test_a_gang_is_complete_once_every_group_has_min_replicas_ready() -> None:
    table = GangTable()
    _planned(table)
    assert table.reservation_count() == 3
    assert [_ready(table, pod, node) for pod, node in zip(PODS, ["n0", "n0", "n1"], strict=True)] == [
        False,
        False,
        True,
    ]
    assert table.summary(REF.key).state is GangState.PLANNED  # type: ignore[union-attr]


def test_only_a_bind_for_the_planned_node_makes_a_member_ready() -> None:
    table = GangTable()
    _planned(table)
    assert table.member_ready(REF.key, PODS[0], member=ReadyMember("n1", "u"), expires_at=1.0) is None
    assert table.member(REF.key, PODS[0]).ready is None  # type: ignore[union-attr]


def test_a_release_binds_ready_members_and_a_lost_one_leaves_the_gang_partly_bound() -> None:
    table = GangTable()
    changes: list[tuple[GangState | None, GangState | None]] = []
    table.subscribe(lambda ref, before, after: changes.append((before, after)))
    _planned(table)
    for pod, node in zip(PODS, ["n0", "n0", "n1"], strict=True):
        _ready(table, pod, node)
    batch = table.release_started(REF.key, pod_facts=_known, used_on=lambda n: {}, allocatable_of=lambda n: {GPU: 8})
    assert [pod for pod, _ in batch.members] == PODS and batch.lost == ()
    assert table.summary(REF.key).state is GangState.RELEASING  # type: ignore[union-attr]
    table.release_finished(REF.key, bound=PODS[:2], gone=[PODS[2]])
    summary = table.summary(REF.key)
    assert summary is not None and summary.state is GangState.PARTIALLY_BOUND
    assert [(c.bound, c.ready, c.min_replicas) for c in summary.counts] == [(2, 0, 3)]
    assert changes == [
        (None, GangState.PLANNED),
        (GangState.PLANNED, GangState.RELEASING),
        (GangState.RELEASING, GangState.PARTIALLY_BOUND),
    ]
    # The two bound members keep their reservations until the store shows them bound; the gone one's is back.
    assert _held(table) == set(PODS[:2])
    table.member_bound_observed(REF.key, PODS[0], node="n0")
    assert _held(table) == {PODS[1]}


def test_ready_members_on_a_node_that_lost_room_are_dropped_and_nothing_is_bound() -> None:
    table = GangTable()
    _planned(table)
    for pod, node in zip(PODS, ["n0", "n0", "n1"], strict=True):
        _ready(table, pod, node)
    # A foreign pod took 4 of n0's 8 GPUs: 4 bound + 8 reserved > 8, so both members on n0 lose their place.
    batch = table.release_started(
        REF.key,
        pod_facts=_known,
        used_on=lambda n: {GPU: 4} if n == "n0" else {},
        allocatable_of=lambda n: {GPU: 8},
    )
    assert batch.members == () and set(batch.lost) == set(PODS[:2])
    assert table.summary(REF.key).state is GangState.PLANNED  # type: ignore[union-attr]
    assert _held(table) == {PODS[2]}
    assert table.member(REF.key, PODS[0]).planned is None  # type: ignore[union-attr]


def test_a_ready_member_whose_pod_was_re_created_is_not_bound() -> None:
    table = GangTable()
    _planned(table, minimum=2)
    for pod, node in zip(PODS, ["n0", "n0", "n1"], strict=True):
        _ready(table, pod, node)
    facts = {PODS[0]: PodFacts(True, "uid-new"), PODS[1]: _known(PODS[1]), PODS[2]: _known(PODS[2])}
    batch = table.release_started(
        REF.key, pod_facts=facts.__getitem__, used_on=lambda n: {}, allocatable_of=lambda n: {GPU: 8}
    )
    assert [pod for pod, _ in batch.members] == PODS[1:] and batch.lost == (PODS[0],)


def test_a_plan_is_refused_when_a_member_became_ready_elsewhere_meanwhile() -> None:
    table = GangTable()
    _planned(table)
    basis = table.planning_basis(REF, now=0.0)
    _ready(table, PODS[0], "n0")  # while a re-plan was being solved
    moved = _commit(nodes=("n2", "n2", "n1"))
    assert not table.planned(REF, commit=moved, basis=basis, now=0.0)
    kept = PlanCommit(**{**moved.__dict__, "assignment": {PODS[1]: "n2", PODS[2]: "n1"}, "kept": {PODS[0]: "n0"}})
    assert table.planned(REF, commit=kept, basis=basis, now=0.0)


def test_a_plan_is_refused_when_a_member_was_bound_elsewhere_meanwhile() -> None:
    # A plan solved in a worker thread read w0 ready, not bound; the release bound it on n0 before the plan was
    # committed. A plan putting w0 on n2 would double its capacity and split the gang: refused, planned again.
    table = GangTable()
    _planned(table)
    basis = table.planning_basis(REF, now=0.0)
    table.member_bound_observed(REF.key, PODS[0], node="n0")
    moved = _commit(nodes=("n2", "n2", "n1"))
    assert not table.planned(REF, commit=moved, basis=basis, now=0.0)
    around = PlanCommit(**{**moved.__dict__, "assignment": {PODS[1]: "n2", PODS[2]: "n1"}})
    assert table.planned(REF, commit=around, basis=basis, now=0.0)


def test_expiry_forgets_a_gang_with_nothing_bound_and_keeps_a_partly_bound_one() -> None:
    table = GangTable()
    _planned(table)
    assert table.expire(59.0) == [] and table.expire(60.0) == [REF.key]
    assert table.summary(REF.key) is None and table.reservation_count() == 0
    _planned(table)
    table.member_bound_observed(REF.key, PODS[0], node="n0")
    assert table.expire(120.0) == [REF.key]
    summary = table.summary(REF.key)
    assert summary is not None and summary.state is GangState.PARTIALLY_BOUND
    assert table.reservation_count() == 0


def test_forgetting_a_gang_returns_its_ready_members_and_counts_stay_by_state() -> None:
    table = GangTable()
    _planned(table)
    _ready(table, PODS[0], "n0")
    assert table.counts_by_state()["Planned"] == 1
    assert table.forget(REF.key) == [PODS[0]]
    assert table.summary(REF.key) is None and table.reservation_count() == 0
    assert set(table.counts_by_state()) == {state.value for state in GangState}


def test_a_member_that_arrives_during_a_gangs_first_plan_makes_its_waiting_decision_stale() -> None:
    # The first plan reads its basis before the gang has a record, finds a member not created yet, and waits;
    # the member arrives in between. Without that news the "not created yet" decision would hold until capacity
    # freed somewhere, and every filter for the gang would be refused.
    table = GangTable()
    basis = table.planning_basis(REF, now=0.0)
    table.members_changed(REF.key)
    table.waiting(REF, reason="1 not created yet", basis=basis)
    assert not table.planning_basis(REF, now=0.0).fresh
    settled = table.planning_basis(REF, now=0.0)
    table.waiting(REF, reason="still waiting", basis=settled)
    assert table.planning_basis(REF, now=0.0).fresh, "no news since: the decision holds"


def _preempting(table: GangTable, awaiting: dict[str, str]) -> None:
    basis = table.planning_basis(REF, now=0.0)
    assert table.preempting(REF, commit=_commit(), basis=basis, awaiting=awaiting, now=0.0)


def test_a_node_counts_as_vacated_when_its_last_victim_goes_and_until_the_plan_changes() -> None:
    table = GangTable()
    _preempting(table, {"default/v0": "n0", "default/v1": "n0", "default/v2": "n1"})
    table.victim_gone("default/v0", now=5.0)
    member = table.member(REF.key, PODS[0])
    assert member is not None and member.vacated_at is None and member.awaiting == ("default/v1",)
    table.victim_gone("default/v1", now=7.0)
    member = table.member(REF.key, PODS[0])
    assert member is not None and member.vacated_at == 7.0 and member.awaiting == ()
    other = table.member(REF.key, PODS[2])
    assert other is not None and other.vacated_at is None and other.awaiting == ("default/v2",)
    _planned(table)  # a plan of its own: nothing it waited for is news any more
    member = table.member(REF.key, PODS[0])
    assert member is not None and member.vacated_at is None
