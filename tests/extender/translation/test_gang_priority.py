"""A gang's priority: its PodGang's PriorityClass first (Grove puts the class there, not on its pods), then its pods'
``spec.priority``, then the cluster's default class; the same value reaches the solver through the one translator."""

from __future__ import annotations

import pytest

from api.core import Pod, PriorityClass
from api.grove import PodGang
from scheduler.extender.state.store import ClusterStore
from scheduler.extender.translation.gang_request import gang_request, single_pod_request
from scheduler.extender.translation.priority import NO_CLASSES, GangPriority, gang_priority, pod_priority
from scheduler.snapshot import parse_snapshot
from tests.builders import make_node, make_pod, make_podgang


def _class(name: str, value: int, *, default: bool = False, never: bool = False) -> PriorityClass:
    return PriorityClass.model_validate(
        {
            "metadata": {"name": name},
            "value": value,
            "globalDefault": default,
            "preemptionPolicy": "Never" if never else "PreemptLowerPriority",
        }
    )


def _store(*classes: PriorityClass) -> ClusterStore:
    store = ClusterStore()
    store.replace("PriorityClass", list(classes))
    return store


def _gang(priority_class: str | None = None) -> PodGang:
    builder = make_podgang("g").group("g-worker", pods=["w0", "w1"])
    return (builder.priority_class(priority_class) if priority_class else builder).obj()


def _pods(*priorities: int | None, never: bool = False) -> list[Pod]:
    pods = []
    for i, value in enumerate(priorities):
        builder = make_pod(f"w{i}").gang("g")
        if value is not None:
            builder = builder.priority(value)
        pod = builder.obj()
        if never:
            pod.spec.preemptionPolicy = "Never"
        pods.append(pod)
    return pods


HIGH, LOW, DEFAULT = _class("high", 1000), _class("low", 10), _class("normal", 50, default=True)


@pytest.mark.parametrize(
    ("gang", "pods", "classes", "expected"),
    [
        # The class on the PodGang wins over whatever the pods carry (Grove's pods carry 0 or the default's value).
        pytest.param(_gang("high"), _pods(0, 0), (HIGH, DEFAULT), GangPriority(1000, True), id="podgang-class"),
        pytest.param(_gang("low"), _pods(500, 500), (LOW,), GangPriority(10, True), id="class-below-pods"),
        pytest.param(
            _gang("calm"), _pods(0), (_class("calm", 900, never=True),), GangPriority(900, False), id="never-class"
        ),
        # No class on the PodGang: the highest pod priority, with that pod's policy.
        pytest.param(_gang(), _pods(5, 70), (HIGH,), GangPriority(70, True), id="highest-pod"),
        pytest.param(_gang(), _pods(5, 70, never=True), (), GangPriority(70, False), id="pod-never"),
        # Nothing carries a priority (pods created without admission): the default class, as admission gives it.
        pytest.param(_gang(), _pods(None, None), (LOW, DEFAULT), GangPriority(50, True), id="default-class"),
        pytest.param(_gang(), _pods(None), (), GangPriority(0, True), id="nothing"),
        # A class the cluster does not have falls through to the pods.
        pytest.param(_gang("gone"), _pods(30), (HIGH,), GangPriority(30, True), id="missing-class"),
    ],
)
def test_the_rule(gang: PodGang, pods: list[Pod], classes: tuple[PriorityClass, ...], expected: GangPriority) -> None:
    found = gang_priority(gang, pods, _store(*classes))
    assert (found.value, found.preempts) == (expected.value, expected.preempts)


def test_a_missing_class_is_said_where_the_value_came_from() -> None:
    found = gang_priority(_gang("gone"), _pods(30), NO_CLASSES)
    assert "PriorityClass gone" in found.source and "does not exist" in found.source and "30" in found.source


def test_several_defaults_take_the_lowest_as_admission_does() -> None:
    store = _store(_class("b", 70, default=True), _class("a", 40, default=True))
    assert gang_priority(_gang(), _pods(None), store).value == 40
    assert pod_priority(_pods(None)[0], store) == 40
    assert pod_priority(_pods(12)[0], store) == 12


def test_the_translator_carries_it_to_the_solver() -> None:
    nodes = [make_node("a").gpus(8).obj()]
    pods = {pod.key: pod for pod in _pods(0, 0)}
    assert gang_request(_gang("high"), pods, nodes, classes=_store(HIGH)).priority == 1000
    assert gang_request(_gang("high"), pods, nodes).priority == 0  # no classes known: the pods' 0
    lone = make_pod("solo").obj()
    assert single_pod_request(lone, nodes, classes=_store(DEFAULT)).priority == 50


def test_a_snapshot_holds_priority_classes_and_answers_for_them() -> None:
    document = {
        "kind": "List",
        "items": [
            make_node("a").gpus(8).dict(),
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 7},
            {"kind": "PriorityClass", "metadata": {"name": "base"}, "value": 1, "globalDefault": True},
        ],
    }
    snapshot = parse_snapshot(document)
    assert [c.name for c in snapshot.priority_classes] == ["high", "base"]
    assert gang_priority(_gang("high"), [], snapshot).value == 7
    assert gang_priority(_gang(), _pods(None), snapshot).value == 1
