"""The validator judges every solver result in tests and benchmarks, so each of its rules is made to fire here
(and shown silent on a sound result, and where a flag turns it off)."""

from __future__ import annotations

import pytest

from placement import Result, Status, violations
from tests.placement.cluster import CLIQUE, GPU, gang, group, hosts, pack, view
from topology import HostSpec

# Two cliques of two 8-GPU nodes: z0c0h0, z0c0h1 in c00; z0c1h0, z0c1h1 in c01. z0c0h1 has 2 GPUs free.
CLUSTER = view(hosts(), used={"z0c0h1": {GPU: 6}})
REQUEST = gang(
    group("w", 2, gpus=4, eligible=["z0c0h0", "z0c0h1", "z0c1h0"]),
    group("x", 1, gpus=1, min_replicas=0),
    packs=[pack("w", required=CLIQUE)],
)
SOUND = Result(Status.PLACED, {"ns/w-0": "z0c0h0", "ns/w-1": "z0c0h0"}, placement_score=1.0)


def placed(assignment: dict[str, str], score: float | None = 1.0) -> Result:
    return Result(Status.PLACED, assignment, placement_score=score)


def test_a_sound_result_has_no_violations() -> None:
    assert violations(REQUEST, CLUSTER, SOUND) == []
    assert violations(REQUEST, CLUSTER, Result(Status.INFEASIBLE, reason="no room")) == []


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(placed({**SOUND.assignment, "ns/stray": "z0c0h0"}), "pod ns/stray is not in gang", id="stray-pod"),
        pytest.param(placed({"ns/w-0": "z0c0h0", "ns/w-1": "z9"}), "placed on unknown node z9", id="unknown-node"),
        pytest.param(
            placed({"ns/w-0": "z0c0h0", "ns/w-1": "z0c1h1"}), "placed on ineligible node z0c1h1", id="ineligible"
        ),
        # Two 4-GPU pods on z0c0h1, which has 8 − 6 = 2 free.
        pytest.param(
            placed({"ns/w-0": "z0c0h1", "ns/w-1": "z0c0h1"}),
            "node z0c0h1 over capacity: 8 nvidia.com/gpu placed, 2 free",
            id="capacity",
        ),
        pytest.param(placed({"ns/w-0": "z0c0h0"}), "group w placed 1 pods, below minReplicas 2", id="min-replicas"),
        pytest.param(placed(SOUND.assignment, score=None), "placementScore None is not in (0, 1]", id="no-score"),
        pytest.param(placed(SOUND.assignment, score=0.0), "placementScore 0.0 is not in (0, 1]", id="zero-score"),
        pytest.param(placed(SOUND.assignment, score=1.5), "placementScore 1.5 is not in (0, 1]", id="score-above-1"),
        pytest.param(
            Result(Status.INFEASIBLE, {"ns/w-0": "z0c0h0"}, reason="half"),
            "status Infeasible but 1 pods assigned (partial gang)",
            id="partial-gang",
        ),
        pytest.param(Result(Status.TIMED_OUT), "status TimedOut without a reason", id="no-reason"),
        pytest.param(
            placed({"ns/w-0": "z0c0h0", "ns/w-1": "z0c1h0"}),
            "packs[0]: required nvidia.com/gpu.clique spans ['c00', 'c01']",
            id="pack",
        ),
    ],
)
def test_each_rule_fires(result: Result, expected: str) -> None:
    found = violations(REQUEST, CLUSTER, result)
    assert any(expected in line for line in found), found


def test_a_node_without_the_required_label_is_named() -> None:
    # The clique's two nodes plus a bare 8-GPU node that carries no labels at all.
    cluster = view([*hosts(cliques=1), HostSpec("bare", {}, {GPU: 8, "cpu": 64_000})])
    request = gang(group("w", 2, gpus=4), packs=[pack("w", required=CLIQUE)])
    assert violations(request, cluster, placed({"ns/w-0": "z0c0h0", "ns/w-1": "z0c0h0"})) == []
    found = violations(request, cluster, placed({"ns/w-0": "bare", "ns/w-1": "bare"}))
    assert any("a pod sits on a node without label nvidia.com/gpu.clique" in line for line in found), found


def test_flags_turn_off_what_a_policy_does_not_promise() -> None:
    partial = Result(Status.INFEASIBLE, {"ns/w-0": "z0c0h0"}, reason="pod by pod, one short")
    assert violations(REQUEST, CLUSTER, partial, partial_ok=True) == []
    split = placed({"ns/w-0": "z0c0h0", "ns/w-1": "z0c1h0"})
    assert violations(REQUEST, CLUSTER, split, packs_ok=True) == []
