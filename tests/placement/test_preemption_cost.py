"""The cost order of a preemption plan: evicting nothing beats anything, then field by field."""

from __future__ import annotations

import pytest

from placement.preemption import PreemptionCost


@pytest.mark.parametrize(
    ("better", "worse"),
    [
        pytest.param(PreemptionCost(), PreemptionCost(victim_priority=-5), id="nothing-evicted-beats-any-priority"),
        pytest.param(
            PreemptionCost(victim_priority=1, victim_gpus=16),
            PreemptionCost(victim_priority=2, victim_gpus=1),
            id="lower-priority-before-fewer-gpus",
        ),
        pytest.param(
            PreemptionCost(victim_priority=1, victim_gpus=4, victim_gangs=3),
            PreemptionCost(victim_priority=1, victim_gpus=8, victim_gangs=1),
            id="fewer-gpus-before-fewer-gangs",
        ),
        pytest.param(
            PreemptionCost(yielded_priority=9, yielded_gpus=64),
            PreemptionCost(victim_priority=0),
            id="any-yield-before-any-eviction",
        ),
        pytest.param(
            PreemptionCost(victim_priority=0, yielded_priority=None),
            PreemptionCost(victim_priority=0, yielded_priority=0),
            id="yielding-nothing-beats-yielding",
        ),
    ],
)
def test_costs_order_by_their_key(better: PreemptionCost, worse: PreemptionCost) -> None:
    assert better < worse and worse > better and better <= worse and not worse <= better
    assert min(worse, better) == better
    assert better.key() < worse.key()
