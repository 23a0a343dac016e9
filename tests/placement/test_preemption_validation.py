"""``preemption_violations`` finds each way a plan can be wrong: a sound plan passes, and each case breaks one rule.

The cluster (two cliques of two 8-GPU nodes), every GPU held by a victim:

- z0c0h0: v/a-0, z0c0h1: v/a-1 — running gang v/a, priority 1, keeps 1 of group w, 8 GPUs each;
- z0c1h0: v/r-0 — reservation v/r, priority 5, 8 GPUs;
- z0c1h1: v/b-0 — running gang v/b, priority 1, keeps 1 of its 1 (4 GPUs); v/h — a pod of no gang at priority 12,
  above the preemptor's 10 (4 GPUs).

The sound plan evicts v/a-1 and puts the preemptor's one 8-GPU pod on z0c0h1: cost (1, 8 GPUs, 1 gang, 1 pod).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from placement import GangRequest, Status
from placement.preemption import Preemption, PreemptionCost, VictimGang, preemption_violations
from tests.placement.cluster import CLIQUE, gang, group, hosts, pack
from tests.placement.victim_builders import busy_view, preemptor, reserved, running, solo, victim_set

VICTIMS, GANGS = victim_set(
    running("v/a", priority=1).min("w", 1).pods("z0c0h0", "z0c0h1", gpus=8),
    reserved("v/r", priority=5).pods("z0c1h0", gpus=8),
    running("v/b", priority=1).min("w", 1).pods("z0c1h1", gpus=4),
    solo("v/h", "z0c1h1", gpus=4, priority=12),
)
VIEW = busy_view(hosts(cliques=2, per_clique=2, gpus=8), VICTIMS)
REQUEST = preemptor(gang(group("p", 1, gpus=8)))
SOUND = Preemption(
    Status.PLACED, {"ns/p-0": "z0c0h1"}, evicted=("v/a-1",), cost=PreemptionCost(1, 8, 1, 1), optimal=True
)


def test_a_sound_plan_passes() -> None:
    assert preemption_violations(REQUEST, VIEW, VICTIMS, GANGS, SOUND) == []


@pytest.mark.parametrize(
    ("request_", "gangs", "result", "found"),
    [
        pytest.param(
            REQUEST,
            GANGS,
            replace(SOUND, assignment={"ns/p-0": "z0c0h0"}),
            "node z0c0h0 over capacity",
            id="pod-where-nothing-was-freed",
        ),
        pytest.param(
            # v/a keeping 1 of 2 is below a minimum of 2.
            REQUEST,
            {**GANGS, "v/a": VictimGang("v/a", 1, {"w": 2})},
            SOUND,
            "gang v/a keeps 1 of group w, below minReplicas 2",
            id="gang-left-below-its-minimum",
        ),
        pytest.param(
            REQUEST,
            GANGS,
            replace(SOUND, evicted=("v/a-1", "v/r-0")),
            "evicted v/r-0 is not a running pod",
            id="reservation-evicted-pod-by-pod",
        ),
        pytest.param(
            REQUEST,
            GANGS,
            replace(SOUND, evicted=("v/a-1",), yielded=("v/a",)),
            "yielded v/a is not a reserved victim gang",
            id="running-gang-said-to-yield",
        ),
        pytest.param(
            # v/h and v/b-0 free z0c1h1's 8 GPUs, but v/h runs at 12, above the preemptor's 10.
            REQUEST,
            GANGS,
            replace(SOUND, assignment={"ns/p-0": "z0c1h1"}, evicted=("v/b-0", "v/h"), cost=PreemptionCost(12, 8, 2, 2)),
            "gang v/h makes way at priority 12, not below 10",
            id="victim-of-higher-priority",
        ),
        pytest.param(
            preemptor(gang(group("p", 1, gpus=8, eligible=["z0c1h0"]))),
            GANGS,
            SOUND,
            "ineligible node z0c0h1",
            id="pod-on-an-ineligible-node",
        ),
        pytest.param(
            # 2 pods in one clique, but z0c0h1 (c00) and z0c1h0 (c01) differ.
            preemptor(gang(group("p", 2, gpus=8), packs=[pack("p", required=CLIQUE)])),
            GANGS,
            replace(
                SOUND,
                assignment={"ns/p-0": "z0c0h1", "ns/p-1": "z0c1h0"},
                yielded=("v/r",),
                cost=PreemptionCost(1, 8, 1, 1, 5, 8, 1),
            ),
            "packs[0]: required nvidia.com/gpu.clique not shared",
            id="required-pack-broken",
        ),
        pytest.param(
            REQUEST,
            GANGS,
            replace(SOUND, assignment={}),
            "group p placed 0 pods, not its minReplicas 1",
            id="guaranteed-pod-missing",
        ),
        pytest.param(
            # 2 pods, 1 guaranteed: room is made for the guaranteed pod only.
            preemptor(gang(group("p", 2, gpus=4, min_replicas=1))),
            GANGS,
            replace(SOUND, assignment={"ns/p-0": "z0c0h1", "ns/p-1": "z0c0h1"}),
            "group p placed 2 pods, not its minReplicas 1",
            id="best-effort-pod-placed",
        ),
        pytest.param(
            REQUEST,
            GANGS,
            replace(SOUND, assignment={"ns/other": "z0c0h1"}),
            "pod ns/other on z0c0h1",
            id="pod-of-another-gang",
        ),
        pytest.param(
            # v/a-1 held 8 GPUs, not 4.
            REQUEST,
            GANGS,
            replace(SOUND, cost=PreemptionCost(1, 4, 1, 1)),
            "does not match the victims chosen",
            id="cost-misreported",
        ),
        pytest.param(
            REQUEST,
            GANGS,
            replace(SOUND, evicted=("v/a-1", "v/x")),
            "evicted v/x is not a victim",
            id="unknown-victim-evicted",
        ),
        pytest.param(
            REQUEST,
            GANGS,
            replace(SOUND, status=Status.INFEASIBLE, reason="no room"),
            "but a plan",
            id="refusal-with-a-plan",
        ),
        pytest.param(
            REQUEST,
            GANGS,
            Preemption(Status.TIMED_OUT),
            "without a reason",
            id="refusal-without-a-reason",
        ),
    ],
)
def test_each_broken_rule_is_found(
    request_: GangRequest, gangs: dict[str, VictimGang], result: Preemption, found: str
) -> None:
    problems = preemption_violations(request_, VIEW, VICTIMS, gangs, result)
    assert any(found in problem for problem in problems), problems
