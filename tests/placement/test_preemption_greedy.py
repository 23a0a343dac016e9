"""The KAI-like greedy baseline: its order (reservations, then lowest priority, smallest gang, key), extras before
the whole gang, no pruning of victims that did not help; and how it compares with the model.

Same cluster as ``test_preemption_plan``: c00 = {z0c0h0, z0c0h1}, c01 = {z0c1h0, z0c1h1}, 8 GPUs a node.
"""

from __future__ import annotations

import random

import pytest

from placement import GangRequest, SolveOptions, Status
from placement.preemption import (
    PreemptionCost,
    Victim,
    VictimGang,
    greedy_preemption,
    plan_preemption,
    preemption_violations,
)
from tests.placement.cluster import CLIQUE, gang, group, hosts, pack
from tests.placement.victim_builders import (
    GPU,
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
FULL = 8


@pytest.mark.parametrize(
    ("request_", "builders", "others", "greedy_evicts", "greedy_cost", "model_cost"),
    [
        pytest.param(
            # v/a (1 GPU on z0c1h1, beside 7 held by others) comes first by key and frees 1 GPU: useless. Then
            # v/b's 8 GPUs on z0c0h0 fit the pod. The greedy keeps both: 1 + 8 = 9 GPUs, 2 gangs; the model 8, 1.
            gang(group("p", 1, gpus=8)),
            [solo("v/a", "z0c1h1", gpus=1, priority=0), solo("v/b", "z0c0h0", gpus=8, priority=0)],
            {"z0c0h1": FULL, "z0c1h0": FULL, "z0c1h1": 7},
            ("v/a", "v/b"),
            PreemptionCost(0, 9, 2, 2),
            PreemptionCost(0, 8, 1, 1),
            id="small-useless-gang-first",
        ),
        pytest.param(
            # The reservation yields first (free to the running), but the pod may only go to z0c0h0: the greedy
            # then evicts v/b too and keeps the yield; the model only evicts.
            gang(group("p", 1, gpus=8, eligible=["z0c0h0"])),
            [reserved("v/r", priority=5).pods("z0c1h0", gpus=8), solo("v/b", "z0c0h0", gpus=8, priority=0)],
            {"z0c0h1": FULL, "z0c1h1": FULL},
            ("v/b",),
            PreemptionCost(0, 8, 1, 1, yielded_priority=5, yielded_gpus=8, yielded_gangs=1),
            PreemptionCost(0, 8, 1, 1),
            id="useless-yield-kept",
        ),
        pytest.param(
            # v/a keeps 2 of 4 pods of 4 GPUs: its last 2 listed (both on z0c0h1) go first and free that node.
            gang(group("p", 1, gpus=8)),
            [running("v/a", priority=0).min("w", 2).pods("z0c0h0", "z0c0h0", "z0c0h1", "z0c0h1", gpus=4)],
            {"z0c1h0": FULL, "z0c1h1": FULL},
            ("v/a-2", "v/a-3"),
            PreemptionCost(0, 8, 1, 2),
            PreemptionCost(0, 8, 1, 2),
            id="extras-before-the-whole-gang",
        ),
        pytest.param(
            # Lowest priority first even when it cannot help: v/low (priority 0) sits in c01, the pack wants c00
            # where v/high (priority 1) sits beside a free node. Greedy: 8 + 8 GPUs at priority 1; model: 8.
            gang(group("p", 2, gpus=8), packs=[pack("p", required=CLIQUE)]),
            [solo("v/low", "z0c1h0", gpus=8, priority=0), solo("v/high", "z0c0h0", gpus=8, priority=1)],
            {"z0c1h1": FULL},
            ("v/high", "v/low"),
            PreemptionCost(1, 16, 2, 2),
            PreemptionCost(1, 8, 1, 1),
            id="lowest-priority-first-even-if-useless",
        ),
    ],
)
def test_the_greedy_walks_its_order_and_keeps_what_it_took(
    request_: GangRequest,
    builders: list[VictimGangBuilder],
    others: dict[str, int],
    greedy_evicts: tuple[str, ...],
    greedy_cost: PreemptionCost,
    model_cost: PreemptionCost,
) -> None:
    victims, gangs = victim_set(*builders)
    view = busy_view(SPECS, victims, others)
    request = preemptor(request_)
    greedy = greedy_preemption(request, view, victims, gangs, OPTIONS)
    model = plan_preemption(request, view, victims, gangs, OPTIONS)
    for result in (greedy, model):
        assert preemption_violations(request, view, victims, gangs, result) == []
        assert result.status == Status.PLACED, result.reason
    assert set(greedy.evicted) == set(greedy_evicts)
    assert greedy.cost == greedy_cost and not greedy.optimal
    assert model.cost == model_cost and model.optimal


def test_the_greedy_fits_without_victims_when_it_can() -> None:
    victims, gangs = victim_set(solo("v/a", "z0c0h0", gpus=8, priority=0))
    view = busy_view(SPECS, victims, {"z0c0h1": FULL, "z0c1h0": FULL})  # z0c1h1 free
    request = preemptor(gang(group("p", 1, gpus=8)))
    result = greedy_preemption(request, view, victims, gangs, OPTIONS)
    assert result.status == Status.PLACED and result.cost == PreemptionCost() and result.optimal
    assert result.assignment == {"ns/p-0": "z0c1h1"}


def _bigger_case(seed: int) -> tuple[list[Victim], dict[str, VictimGang], dict[str, int]]:
    """32 nodes in 8 cliques, every GPU held: by 24 random victim gangs or by others (wholly, on 1 node in 4);
    the GPUs others hold per node."""
    rng = random.Random(seed)
    specs = hosts(cliques=8, per_clique=4, gpus=8)
    names = [h.name for h in specs]
    room = {name: 0 if rng.random() < 0.25 else 8 for name in names}
    victims: list[Victim] = []
    gangs: dict[str, VictimGang] = {}
    for g in range(24):
        key = f"v/g{g:02d}"
        kind = rng.choice(["running", "solo", "reserved"])
        pods = 1 if kind == "solo" else rng.randint(2, 4)
        gpus = rng.choice([2, 4, 8])
        placed = 0
        for node in rng.sample(names, len(names)):
            if placed == pods:
                break
            if room[node] >= gpus:
                room[node] -= gpus
                victims.append(Victim(f"{key}-{placed}", node, {GPU: gpus}, key, "w"))
                placed += 1
        if placed:
            minimum = {"w": rng.randint(1, placed)} if kind == "running" else {}
            gangs[key] = VictimGang(key, rng.randint(0, 4), minimum, reserved=kind == "reserved")
    held = {v.node: 0 for v in victims}
    for victim in victims:
        held[victim.node] += victim.demand[GPU]
    return victims, gangs, {name: 8 - held.get(name, 0) for name in names}  # others hold the rest


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_on_a_bigger_cluster_the_plan_is_sound_and_never_costs_more_than_the_greedy(seed: int) -> None:
    victims, gangs, others = _bigger_case(seed)
    view = busy_view(hosts(cliques=8, per_clique=4, gpus=8), victims, others)
    assert all(units[GPU] == 0 for units in view.free.values())
    request = preemptor(gang(group("p", 4, gpus=8), packs=[pack("p", required=CLIQUE)]))
    greedy = greedy_preemption(request, view, victims, gangs, OPTIONS)
    model = plan_preemption(request, view, victims, gangs, OPTIONS)
    for result in (greedy, model):
        assert preemption_violations(request, view, victims, gangs, result) == []
    assert model.status == greedy.status == Status.PLACED, (model.reason, greedy.reason)
    assert model.cost <= greedy.cost
