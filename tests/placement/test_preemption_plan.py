"""``plan_preemption`` case by case: which victims make way, and what the plan costs.

The cluster is two NVLink cliques of two 8-GPU nodes: c00 = {z0c0h0, z0c0h1}, c01 = {z0c1h0, z0c1h1}. A node
holds its victims' GPUs and, where the case says ``others``, GPUs of pods that are no victims; the rest is free.
Costs read (highest evicted priority, GPUs evicted, gangs, pods; highest yielded priority, GPUs, gangs).
"""

from __future__ import annotations

import pytest

from placement import GangRequest, SolveOptions, Status
from placement.preemption import (
    Budget,
    Preemption,
    PreemptionCost,
    greedy_preemption,
    plan_preemption,
    preemption_violations,
)
from tests.placement.cluster import CLIQUE, HOSTNAME, gang, group, hosts, pack
from tests.placement.victim_builders import (
    VictimGangBuilder,
    busy_view,
    preemptor,
    reserved,
    running,
    solo,
    victim_set,
)

SPECS = hosts(cliques=2, per_clique=2, gpus=8)
OPTIONS = SolveOptions(time_limit_seconds=10)
FULL = 8  # GPUs of a node held by pods that are no victims


def _plan(
    request: GangRequest, builders: list[VictimGangBuilder], others: dict[str, int]
) -> tuple[Preemption, list[str]]:
    victims, gangs = victim_set(*builders)
    view = busy_view(SPECS, victims, others)
    result = plan_preemption(preemptor(request), view, victims, gangs, OPTIONS)
    return result, preemption_violations(preemptor(request), view, victims, gangs, result)


@pytest.mark.parametrize(
    ("request_", "builders", "others", "evicted", "yielded", "cost"),
    [
        pytest.param(
            # 4 pods of 4 GPUs on c00, keeps 2: losing 2 extras frees 8 GPUs, enough for 2 pods of 4.
            gang(group("p", 2, gpus=4)),
            [running("v/a", priority=1).min("w", 2).pods("z0c0h0", "z0c0h0", "z0c0h1", "z0c0h1", gpus=4)],
            {"z0c1h0": FULL, "z0c1h1": FULL},
            2,
            (),
            PreemptionCost(1, 8, 1, 2),
            id="extras-only-when-they-suffice",
        ),
        pytest.param(
            # The same gang with minReplicas 4 has no extras: it goes whole, 4 pods x 4 GPUs = 16 GPUs.
            gang(group("p", 2, gpus=4)),
            [running("v/a", priority=1).min("w", 4).pods("z0c0h0", "z0c0h0", "z0c0h1", "z0c0h1", gpus=4)],
            {"z0c1h0": FULL, "z0c1h1": FULL},
            4,
            (),
            PreemptionCost(1, 16, 1, 4),
            id="whole-gang-when-no-extras",
        ),
        pytest.param(
            # One 8-GPU pod would do, but the gang keeps 2 of 2: whole, 2 x 8 = 16 GPUs.
            gang(group("p", 1, gpus=8)),
            [running("v/a", priority=1).min("w", 2).pods("z0c0h0", "z0c0h1", gpus=8)],
            {"z0c1h0": FULL, "z0c1h1": FULL},
            2,
            (),
            PreemptionCost(1, 16, 1, 2),
            id="gang-at-its-minimum-is-never-split",
        ),
        pytest.param(
            # Only 2 of a minimum of 3 are listed (one already lost): the gang may lose none short of all.
            gang(group("p", 1, gpus=8)),
            [running("v/a", priority=1).min("w", 3).pods("z0c0h0", "z0c0h1", gpus=8)],
            {"z0c1h0": FULL, "z0c1h1": FULL},
            2,
            (),
            PreemptionCost(1, 16, 1, 2),
            id="gang-below-its-minimum-is-never-split",
        ),
        pytest.param(
            # A group the gang names no minimum for may lose members: its one 8-GPU pod, not the 2 of group w.
            gang(group("p", 1, gpus=8)),
            [
                running("v/a", priority=1)
                .min("w", 2)
                .pods("z0c0h0", "z0c0h1", gpus=8)
                .pods("z0c1h0", gpus=8, group="helper")
            ],
            {"z0c1h1": FULL},
            1,
            (),
            PreemptionCost(1, 8, 1, 1),
            id="unnamed-group-loses-members-freely",
        ),
        pytest.param(
            # The reservation (priority 5) yields rather than the running pod (priority 0) being evicted.
            gang(group("p", 1, gpus=8)),
            [reserved("v/r", priority=5).pods("z0c1h0", gpus=8), solo("v/b", "z0c0h0", gpus=8, priority=0)],
            {"z0c0h1": FULL, "z0c1h1": FULL},
            0,
            ("v/r",),
            PreemptionCost(yielded_priority=5, yielded_gpus=8, yielded_gangs=1),
            id="reservation-yields-before-any-eviction",
        ),
        pytest.param(
            # Eligible only on z0c0h0, where no reservation sits: the running pod is evicted, nothing yields.
            gang(group("p", 1, gpus=8, eligible=["z0c0h0"])),
            [reserved("v/r", priority=5).pods("z0c1h0", gpus=8), solo("v/b", "z0c0h0", gpus=8, priority=0)],
            {"z0c0h1": FULL, "z0c1h1": FULL},
            1,
            (),
            PreemptionCost(0, 8, 1, 1),
            id="eviction-when-no-reservation-helps",
        ),
        pytest.param(
            # Priority 1 costs 16 GPUs (2 x 8, whole), priority 2 costs 8: the lower priority is chosen.
            gang(group("p", 1, gpus=8)),
            [
                running("v/low", priority=1).min("w", 2).pods("z0c0h0", "z0c0h1", gpus=8),
                solo("v/high", "z0c1h0", gpus=8, priority=2),
            ],
            {"z0c1h1": FULL},
            2,
            (),
            PreemptionCost(1, 16, 1, 2),
            id="lowest-priority-even-at-more-gpus",
        ),
        pytest.param(
            # Both at priority 1: 8 GPUs beat 16.
            gang(group("p", 1, gpus=8)),
            [
                running("v/big", priority=1).min("w", 2).pods("z0c0h0", "z0c0h1", gpus=8),
                solo("v/small", "z0c1h0", gpus=8, priority=1),
            ],
            {"z0c1h1": FULL},
            1,
            (),
            PreemptionCost(1, 8, 1, 1),
            id="fewer-gpus-among-equal-priorities",
        ),
        pytest.param(
            # 8 GPUs either way: two pods of no gang on z0c0h0 (2 gangs) or one gang's 2 pods on z0c0h1 (1 gang).
            gang(group("p", 1, gpus=8)),
            [
                solo("v/a", "z0c0h0", gpus=4, priority=1),
                solo("v/b", "z0c0h0", gpus=4, priority=1),
                running("v/g", priority=1).pods("z0c0h1", "z0c0h1", gpus=4),
            ],
            {"z0c1h0": FULL, "z0c1h1": FULL},
            2,
            (),
            PreemptionCost(1, 8, 1, 2),
            id="fewer-gangs-among-equal-gpus",
        ),
        pytest.param(
            # 16 GPUs in 2 pods: z0c0h1 is free, so evicting the priority-0 pod on z0c1h0 makes room across cliques.
            gang(group("p", 2, gpus=8)),
            [solo("v/c00", "z0c0h0", gpus=8, priority=1), solo("v/c01", "z0c1h0", gpus=8, priority=0)],
            {"z0c1h1": FULL},
            1,
            (),
            PreemptionCost(0, 8, 1, 1),
            id="no-pack-takes-the-cheaper-victim",
        ),
        pytest.param(
            # The same gang packed in one clique: only c00 can hold it (z0c1h1 is full), so its priority-1 pod goes.
            gang(group("p", 2, gpus=8), packs=[pack("p", required=CLIQUE)]),
            [solo("v/c00", "z0c0h0", gpus=8, priority=1), solo("v/c01", "z0c1h0", gpus=8, priority=0)],
            {"z0c1h1": FULL},
            1,
            (),
            PreemptionCost(1, 8, 1, 1),
            id="required-pack-chooses-victims-in-one-clique",
        ),
        pytest.param(
            # z0c1h1 is free: the gang fits as it is.
            gang(group("p", 1, gpus=8)),
            [solo("v/a", "z0c0h0", gpus=8, priority=0)],
            {"z0c0h1": FULL, "z0c1h0": FULL},
            0,
            (),
            PreemptionCost(),
            id="already-fits-evicts-nothing",
        ),
        pytest.param(
            # 4 pods of 8 GPUs, 1 guaranteed: room for 1 is free, and nothing is evicted for the 3 best-effort.
            gang(group("p", 4, gpus=8, min_replicas=1)),
            [solo("v/a", "z0c0h0", gpus=8, priority=0)],
            {"z0c0h1": FULL, "z0c1h0": FULL},
            0,
            (),
            PreemptionCost(),
            id="never-evicts-for-best-effort-extras",
        ),
    ],
)
def test_the_plan_chooses_the_cheapest_victims(
    request_: GangRequest,
    builders: list[VictimGangBuilder],
    others: dict[str, int],
    evicted: int,
    yielded: tuple[str, ...],
    cost: PreemptionCost,
) -> None:
    result, problems = _plan(request_, builders, others)
    assert problems == []
    assert result.status == Status.PLACED, result.reason
    assert result.optimal
    assert result.cost == cost
    assert len(result.evicted) == evicted
    assert result.yielded == yielded
    assert len(result.assignment) == sum(g.min_replicas for g in request_.groups)


def test_the_pack_decides_which_pod_goes() -> None:
    """Not only the cost: the packed gang evicts the pod in c00, the unpacked one the pod in c01."""
    victims = [solo("v/c00", "z0c0h0", gpus=8, priority=1), solo("v/c01", "z0c1h0", gpus=8, priority=0)]
    packed, _ = _plan(gang(group("p", 2, gpus=8), packs=[pack("p", required=CLIQUE)]), victims, {"z0c1h1": FULL})
    loose, _ = _plan(gang(group("p", 2, gpus=8)), victims, {"z0c1h1": FULL})
    assert packed.evicted == ("v/c00",) and set(packed.assignment.values()) == {"z0c0h0", "z0c0h1"}
    assert loose.evicted == ("v/c01",)


@pytest.mark.parametrize(
    ("request_", "builders", "others", "reason"),
    [
        pytest.param(
            # 5 pods of 8 GPUs; 4 nodes of 8 hold one each even with every victim gone.
            gang(group("p", 5, gpus=8)),
            [running("v/a", priority=0).pods("z0c0h0", "z0c0h1", "z0c1h0", "z0c1h1", gpus=8)],
            {},
            "not even if all 4 victims made way: group p needs 5 pods of 8 nvidia.com/gpu each; only 4 fit",
            id="more-gpus-than-the-cluster",
        ),
        pytest.param(
            # 2 x 8 GPUs on one 8-GPU node: no choice of victims makes a node larger.
            gang(group("p", 2, gpus=8), packs=[pack("p", required=HOSTNAME)]),
            [solo("v/a", "z0c0h0", gpus=8, priority=0), solo("v/b", "z0c0h1", gpus=8, priority=0)],
            {"z0c1h0": FULL, "z0c1h1": FULL},
            "in one kubernetes.io/hostname",
            id="pack-larger-than-any-node",
        ),
        pytest.param(
            # Eligible only on z0c1h1, which pods that are no victims fill.
            gang(group("p", 1, gpus=8, eligible=["z0c1h1"])),
            [solo("v/a", "z0c0h0", gpus=8, priority=0)],
            {"z0c0h1": FULL, "z0c1h0": FULL, "z0c1h1": FULL},
            "group p needs 1 pod of 8 nvidia.com/gpu each; only 0 fit on the 1 eligible nodes",
            id="victims-only-on-ineligible-nodes",
        ),
        pytest.param(
            # Nothing offered, nothing free.
            gang(group("p", 1, gpus=8)),
            [],
            {"z0c0h0": FULL, "z0c0h1": FULL, "z0c1h0": FULL, "z0c1h1": FULL},
            "no victims were offered",
            id="no-victims-offered",
        ),
        pytest.param(
            # 2 x 8 GPUs in one clique; the victims free 8 in each clique, and the other node of each is full.
            gang(group("p", 2, gpus=8), packs=[pack("p", required=CLIQUE)]),
            [solo("v/a", "z0c0h0", gpus=8, priority=0), solo("v/b", "z0c1h0", gpus=8, priority=0)],
            {"z0c0h1": FULL, "z0c1h1": FULL},
            "in one nvidia.com/gpu.clique",
            id="victims-spread-over-cliques",
        ),
    ],
)
def test_a_gang_no_choice_makes_room_for_is_refused_with_a_reason(
    request_: GangRequest, builders: list[VictimGangBuilder], others: dict[str, int], reason: str
) -> None:
    result, problems = _plan(request_, builders, others)
    assert problems == []
    assert result.status == Status.INFEASIBLE
    assert reason in result.reason
    assert not result.evicted and not result.yielded and not result.assignment


class _SteppingClock:
    """A clock that moves ``step`` seconds every time it is read: the deadline passes after a few reads."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_out_of_time_before_any_choice_is_a_timeout_with_a_reason() -> None:
    victims, gangs = victim_set(solo("v/a", "z0c0h0", gpus=8, priority=0))
    view = busy_view(SPECS, victims, {"z0c0h1": FULL, "z0c1h0": FULL, "z0c1h1": FULL})
    request = preemptor(gang(group("p", 1, gpus=8)))
    options = SolveOptions(time_limit_seconds=1, clock=_SteppingClock(10))
    for plan in (plan_preemption, greedy_preemption):
        result = plan(request, view, victims, gangs, options)
        assert result.status == Status.TIMED_OUT, plan.__name__
        assert "none" in result.reason
        assert preemption_violations(request, view, victims, gangs, result) == []


def test_a_disruption_budget_steers_the_choice_and_can_leave_nothing_to_choose() -> None:
    """v/cheap (priority 0, 8 GPUs on z0c0h0) is the cheapest victim, but its budget allows no eviction: the plan
    takes v/dear (priority 1) instead. With both protected, not even every victim may go, and the gang waits."""
    victims, gangs = victim_set(
        solo("v/cheap", "z0c0h0", gpus=8, priority=0), solo("v/dear", "z0c1h0", gpus=8, priority=1)
    )
    others = {"z0c0h1": FULL, "z0c1h1": FULL}
    view = busy_view(SPECS, victims, others)
    request = preemptor(gang(group("p", 1, gpus=8)))
    one = [Budget("cheap-pdb", ("v/cheap",), 0)]
    steered = plan_preemption(request, view, victims, gangs, OPTIONS, budgets=one)
    assert preemption_violations(request, view, victims, gangs, steered, budgets=one) == []
    assert steered.status == Status.PLACED and steered.evicted == ("v/dear",)
    both = [*one, Budget("dear-pdb", ("v/dear",), 0)]
    refused = plan_preemption(request, view, victims, gangs, OPTIONS, budgets=both)
    assert refused.status == Status.INFEASIBLE and "disruption budgets allow" in refused.reason, refused.reason
