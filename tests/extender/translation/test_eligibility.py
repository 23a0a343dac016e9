"""Node eligibility, rule by rule, as kube-scheduler's NodeUnschedulable, TaintToleration and NodeAffinity do it."""

from __future__ import annotations

import pytest

from api.core import Taint, Toleration
from scheduler.extender.translation.eligibility import (
    REASON_AFFINITY,
    REASON_UNSCHEDULABLE,
    eligible_nodes,
    node_rejection,
    rejections,
    tolerates,
)
from tests.builders import NodeBuilder, PodBuilder, make_node, make_pod


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        pytest.param(Toleration(key="k", value="v"), Taint(key="k", value="v", effect="NoSchedule"), True, id="equal"),
        pytest.param(
            Toleration(key="k", operator="Equal", value="v"),
            Taint(key="k", value="w", effect="NoSchedule"),
            False,
            id="equal-other-value",
        ),
        pytest.param(
            Toleration(key="k", operator="Exists"), Taint(key="k", value="any", effect="NoSchedule"), True, id="exists"
        ),
        pytest.param(
            Toleration(key="k", operator="Exists"), Taint(key="j", effect="NoSchedule"), False, id="exists-other-key"
        ),
        pytest.param(
            Toleration(operator="Exists"), Taint(key="anything", value="x", effect="NoExecute"), True, id="empty-key"
        ),
        pytest.param(
            Toleration(operator="Exists", effect="NoSchedule"),
            Taint(key="k", effect="NoExecute"),
            False,
            id="empty-key-other-effect",
        ),
        pytest.param(
            Toleration(key="k", operator="Exists", effect="NoExecute"),
            Taint(key="k", effect="NoExecute"),
            True,
            id="same-effect",
        ),
        pytest.param(
            Toleration(key="k"), Taint(key="k", value="v", effect="NoSchedule"), False, id="empty-op-is-equal"
        ),
        pytest.param(
            Toleration(key="k", operator="Lt", value="5"),
            Taint(key="k", value="3", effect="NoSchedule"),
            False,
            id="unknown-operator-tolerates-nothing",
        ),
    ],
)
def test_tolerates(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def _gpu_node() -> NodeBuilder:
    return make_node("n1").gpus(8).label("nvidia.com/gpu.product", "H100").label("rank", "7")


@pytest.mark.parametrize(
    ("node", "pod", "reason"),
    [
        pytest.param(_gpu_node(), make_pod("p"), None, id="plain"),
        pytest.param(_gpu_node().unschedulable(), make_pod("p"), REASON_UNSCHEDULABLE, id="cordoned"),
        pytest.param(
            _gpu_node().unschedulable(),
            make_pod("p").toleration("node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"),
            None,
            id="cordoned-tolerated",
        ),
        pytest.param(
            _gpu_node().taint("gpu", "true"),
            make_pod("p"),
            "node(s) had untolerated taint {gpu: true}",
            id="noschedule-taint",
        ),
        pytest.param(
            _gpu_node().taint("gpu", "true", effect="NoExecute"),
            make_pod("p"),
            "node(s) had untolerated taint {gpu: true}",
            id="noexecute-taint",
        ),
        pytest.param(
            _gpu_node().taint("gpu", "true", effect="PreferNoSchedule"), make_pod("p"), None, id="prefer-is-soft"
        ),
        pytest.param(
            _gpu_node().taint("gpu", "true").taint("maint", effect="NoExecute"),
            make_pod("p").toleration("gpu", "true", effect="NoSchedule"),
            "node(s) had untolerated taint {maint: }",
            id="second-taint-untolerated",
        ),
        pytest.param(
            _gpu_node().taint("gpu", "true").taint("maint", effect="NoExecute"),
            make_pod("p").toleration(operator="Exists"),
            None,
            id="tolerate-everything",
        ),
        pytest.param(
            _gpu_node(), make_pod("p").node_selector("nvidia.com/gpu.product", "H100"), None, id="selector-match"
        ),
        pytest.param(
            _gpu_node(), make_pod("p").node_selector("nvidia.com/gpu.product", "B200"), REASON_AFFINITY, id="selector"
        ),
        pytest.param(_gpu_node(), make_pod("p").node_selector("absent", "x"), REASON_AFFINITY, id="selector-absent"),
        pytest.param(_gpu_node(), make_pod("p").affinity_term([("rank", "In", ["6", "7"])]), None, id="in"),
        pytest.param(_gpu_node(), make_pod("p").affinity_term([("rank", "In", ["6"])]), REASON_AFFINITY, id="in-miss"),
        pytest.param(_gpu_node(), make_pod("p").affinity_term([("rank", "NotIn", ["7"])]), REASON_AFFINITY, id="notin"),
        pytest.param(_gpu_node(), make_pod("p").affinity_term([("absent", "NotIn", ["7"])]), None, id="notin-absent"),
        pytest.param(_gpu_node(), make_pod("p").affinity_term([("rank", "Exists", [])]), None, id="exists"),
        pytest.param(
            _gpu_node(), make_pod("p").affinity_term([("absent", "Exists", [])]), REASON_AFFINITY, id="exists-miss"
        ),
        pytest.param(_gpu_node(), make_pod("p").affinity_term([("absent", "DoesNotExist", [])]), None, id="dne"),
        pytest.param(
            _gpu_node(), make_pod("p").affinity_term([("rank", "DoesNotExist", [])]), REASON_AFFINITY, id="dne-miss"
        ),
        pytest.param(_gpu_node(), make_pod("p").affinity_term([("rank", "Gt", ["6"])]), None, id="gt"),  # 7 > 6
        pytest.param(_gpu_node(), make_pod("p").affinity_term([("rank", "Gt", ["7"])]), REASON_AFFINITY, id="gt-eq"),
        pytest.param(_gpu_node(), make_pod("p").affinity_term([("rank", "Lt", ["8"])]), None, id="lt"),  # 7 < 8
        pytest.param(_gpu_node(), make_pod("p").affinity_term([("rank", "Lt", ["7"])]), REASON_AFFINITY, id="lt-eq"),
        pytest.param(
            _gpu_node().label("rank", "seven"),
            make_pod("p").affinity_term([("rank", "Gt", ["1"])]),
            REASON_AFFINITY,
            id="gt-non-integer-label",
        ),
        pytest.param(
            _gpu_node(), make_pod("p").affinity_term([("absent", "Lt", ["9"])]), REASON_AFFINITY, id="lt-absent"
        ),
        pytest.param(
            _gpu_node(),
            make_pod("p").affinity_term([("rank", "In", ["7"]), ("nvidia.com/gpu.product", "In", ["B200"])]),
            REASON_AFFINITY,
            id="term-requirements-are-anded",
        ),
        pytest.param(
            _gpu_node(),
            make_pod("p").affinity_term([("rank", "In", ["1"])]).affinity_term([("rank", "In", ["7"])]),
            None,
            id="terms-are-ored",
        ),
        pytest.param(
            _gpu_node(), make_pod("p").affinity_term(fields=[("metadata.name", "In", ["n1"])]), None, id="field-in"
        ),
        pytest.param(
            _gpu_node(),
            make_pod("p").affinity_term(fields=[("metadata.name", "NotIn", ["n1"])]),
            REASON_AFFINITY,
            id="field-notin",
        ),
        pytest.param(
            _gpu_node(),
            make_pod("p").affinity_term(fields=[("metadata.uid", "In", ["n1"])]),
            REASON_AFFINITY,
            id="field-unsupported",
        ),
        pytest.param(
            _gpu_node(),
            make_pod("p").affinity_term([("rank", "In", ["7"])], fields=[("metadata.name", "In", ["n2"])]),
            REASON_AFFINITY,
            id="expressions-and-fields-anded",
        ),
        pytest.param(
            _gpu_node(),
            make_pod("p").node_selector("nvidia.com/gpu.product", "B200").affinity_term([("rank", "In", ["7"])]),
            REASON_AFFINITY,
            id="selector-and-affinity-both-needed",
        ),
    ],
)
def test_node_rejection(node: NodeBuilder, pod: PodBuilder, reason: str | None) -> None:
    assert node_rejection(pod.obj(), node.obj()) == reason


def test_an_empty_term_selects_no_node() -> None:
    pod = make_pod("p").affinity_term([])
    assert node_rejection(pod.obj(), make_node("n").obj()) == REASON_AFFINITY


def test_eligible_nodes_is_none_when_every_node_passes() -> None:
    nodes = [make_node("a").obj(), make_node("b").taint("gpu").obj(), make_node("c").unschedulable().obj()]
    assert eligible_nodes(make_pod("p").obj(), nodes) == frozenset({"a"})
    assert eligible_nodes(make_pod("p").toleration(operator="Exists").obj(), nodes) is None
    assert rejections(make_pod("p").obj(), nodes) == {
        "b": "node(s) had untolerated taint {gpu: }",
        "c": REASON_UNSCHEDULABLE,
    }
