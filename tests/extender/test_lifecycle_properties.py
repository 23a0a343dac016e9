"""Properties of the gang lifecycle on the kube-scheduler simulator, whatever the gangs, their order and the faults:

- every gang that fits is eventually bound whole;
- no node is ever overcommitted (checked on every binding the API accepts);
- no gang stays partly bound past its repair, and one partly bound for long has said so on its PodGang.

Gangs fit by construction: pods of 1, 2 or 4 GPUs on 4-GPU nodes, with at least as many GPUs as all gangs need
(sizes dividing the node pack without waste). Sizes are drawn mostly small; the largest bucket reaches
``GROVE_SIM_MAX_GANG`` pods (3,000 by default, to keep ``make test`` short; set it to 10000 for the full range).
"""

from __future__ import annotations

import math
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.sim.simulation import GangSpec, Simulation
from scheduler.extender.coordinator import CoordinatorConfig

MAX_GANG = int(os.environ.get("GROVE_SIM_MAX_GANG", "3000"))

_size = st.sampled_from(["small"] * 8 + ["medium"] * 3 + ["large"]).flatmap(
    lambda bucket: {
        "small": st.integers(1, 16),
        "medium": st.integers(17, 300),
        "large": st.integers(301, MAX_GANG),
    }[bucket]
)


@st.composite
def _gang(draw: st.DrawFn, index: int) -> GangSpec:
    size = draw(_size)
    gpus = draw(st.sampled_from([1, 1, 2, 4]))
    minimum = draw(st.integers(max(1, size // 2), size))
    cohort = draw(st.sets(st.integers(0, size - 1), max_size=min(size - 1, 8))) if size > 1 else set()
    return GangSpec(
        f"g{index}",
        {"w": (size, minimum, gpus)},
        at=draw(st.floats(0, 5)),
        late=frozenset(cohort),
        late_at=draw(st.floats(0, 20)),
    )


@st.composite
def _scenario(draw: st.DrawFn) -> dict:  # type: ignore[type-arg]
    count = draw(st.integers(1, 3))
    gangs = [draw(_gang(i)) for i in range(count)]
    total = sum(size * gpus for spec in gangs for size, _, gpus in spec.groups.values())
    while total > MAX_GANG * 1.5 and len(gangs) > 1:  # bound the work of one example
        dropped = gangs.pop()
        total -= sum(size * gpus for size, _, gpus in dropped.groups.values())
    return {
        "gangs": gangs,
        "spare_nodes": draw(st.integers(0, 3)),
        "pace": draw(st.sampled_from([40.0, 80.0, 200.0])),
        "watch_lag": draw(st.sampled_from([0.0, 0.02, 0.3])),
        "restart": draw(
            st.one_of(
                st.none(),
                st.tuples(st.just("at"), st.floats(0.5, 30), st.floats(0, 15)),
                st.tuples(st.just("binds"), st.integers(1, 200), st.floats(0, 15)),
            )
        ),
        "faults": draw(
            st.lists(
                st.tuples(
                    st.integers(0, count - 1),
                    st.integers(0, 50),
                    st.sampled_from(["delete", "recreate", "conflict", "unavailable", "timeout"]),
                    st.integers(1, 3),
                ),
                max_size=4,
            )
        ),
        "status_failures": draw(st.integers(0, 3)),
    }


@settings(max_examples=12)
@given(scenario=_scenario())
def test_every_gang_that_fits_binds_whole_and_nothing_is_overcommitted(scenario: dict) -> None:  # type: ignore[type-arg]
    gangs: list[GangSpec] = scenario["gangs"]
    total = sum(size * gpus for spec in gangs for size, _, gpus in spec.groups.values())
    sim = Simulation(
        nodes=math.ceil(total / 4) + scenario["spare_nodes"],
        gpus_per_node=4,
        pods_per_second=scenario["pace"],
        watch_lag=scenario["watch_lag"],
        config=CoordinatorConfig(),
    )
    for spec in gangs:
        sim.add_gang(spec)
    restart = scenario["restart"]
    if restart is not None and restart[0] == "at":
        sim.restart_extender(at=restart[1], downtime=restart[2])
    elif restart is not None:
        sim.restart_after_binds(restart[1], downtime=restart[2])
    for gang, member, fault, times in scenario["faults"]:
        members = sim.members(gangs[gang % len(gangs)].name)  # gangs past the work bound were dropped
        sim.fail_binds([members[member % len(members)]], fault, times=times)
    sim.api.status_failures = scenario["status_failures"]
    pods = sum(spec.pods for spec in gangs)
    # Generous: every pod offered a few times over at the slowest pace, plus backoffs, restarts and retries.
    out = sim.run(until=120 + 6 * pods / scenario["pace"])
    assert out.overcommits == []
    assert len(out.whole_at) == len(gangs), f"not all whole: {out.summary()} in {out.simulated_seconds:.0f} s"
    assert out.partial_at_end == []
    assert out.partial_unreported == []
