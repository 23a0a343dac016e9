"""Input that would make a preemption plan unsafe or meaningless is refused as ``Invalid``, naming the field and
the rule, by the model and the greedy alike; nothing is evicted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from placement import GangRequest, SolveOptions, Status
from placement.preemption import Victim, VictimGang, greedy_preemption, plan_preemption
from tests.placement.cluster import gang, group, hosts
from tests.placement.victim_builders import GPU, busy_view, preemptor

SPECS = hosts(cliques=1, per_clique=2, gpus=8)  # z0c0h0, z0c0h1
REQUEST = preemptor(gang(group("p", 1, gpus=8)))  # priority 10


def _victim(key: str = "v/a-0", *, node: str = "z0c0h0", gang_key: str = "v/a", gpus: int = 8) -> Victim:
    return Victim(key, node, {GPU: gpus}, gang_key, "w")


@pytest.mark.parametrize(
    ("victims", "gangs", "options", "request_", "reason"),
    [
        pytest.param(
            [_victim()],
            {"v/a": VictimGang("v/a", 10)},
            SolveOptions(),
            REQUEST,
            "victims[0] (v/a-0): gang v/a has priority 10, not below the preemptor's 10",
            id="equal-priority",
        ),
        pytest.param(
            [_victim("v/b-0", gang_key="v/b"), _victim()],
            {"v/a": VictimGang("v/a", 11), "v/b": VictimGang("v/b", 1)},
            SolveOptions(),
            REQUEST,
            "victims[1] (v/a-0): gang v/a has priority 11, not below the preemptor's 10",
            id="higher-priority",
        ),
        pytest.param(
            [_victim(gang_key="v/missing")],
            {"v/a": VictimGang("v/a", 1)},
            SolveOptions(),
            REQUEST,
            "victims[0] (v/a-0): gang v/missing is not among the victim gangs",
            id="unknown-gang",
        ),
        pytest.param(
            [_victim(node="nowhere")],
            {"v/a": VictimGang("v/a", 1)},
            SolveOptions(),
            REQUEST,
            "victims[0] (v/a-0): node nowhere is not in the cluster view",
            id="unknown-node",
        ),
        pytest.param(
            [_victim(), _victim()],
            {"v/a": VictimGang("v/a", 1)},
            SolveOptions(),
            REQUEST,
            "victims[1] (v/a-0): key appears twice among the victims",
            id="duplicate-key",
        ),
        pytest.param(
            [_victim(gpus=-8)],
            {"v/a": VictimGang("v/a", 1)},
            SolveOptions(),
            REQUEST,
            "victims[0] (v/a-0): demand[nvidia.com/gpu] must be a non-negative integer, got -8",
            id="negative-demand",
        ),
        pytest.param(
            [_victim()],
            {"v/a": VictimGang("v/other", 1)},
            SolveOptions(),
            REQUEST,
            "gangs[v/a]: the entry's key must be its gang's key, got 'v/other'",
            id="gang-filed-under-another-key",
        ),
        pytest.param(
            [_victim()],
            {"v/a": VictimGang("v/a", 1, {"w": -1})},
            SolveOptions(),
            REQUEST,
            "gangs[v/a].min_replicas[w] must be a non-negative integer, got -1",
            id="negative-minimum",
        ),
        pytest.param(
            [_victim()],
            {"v/a": VictimGang("v/a", 1)},
            SolveOptions(policy="first-fit"),
            REQUEST,
            "options.policy must be one of cpsat, topology-greedy for preemption",
            id="policy-that-may-split-the-gang",
        ),
        pytest.param(
            [_victim()],
            {"v/a": VictimGang("v/a", 1)},
            SolveOptions(time_limit_seconds=0),
            REQUEST,
            "options.time_limit_seconds must be positive, got 0",
            id="no-time-to-solve",
        ),
        pytest.param(
            [_victim()],
            {"v/a": VictimGang("v/a", 1)},
            SolveOptions(),
            GangRequest("ns", "preemptor", (), priority=10),
            "gang ns/preemptor: groups must not be empty",
            id="malformed-request",
        ),
    ],
)
def test_bad_input_is_invalid_and_named(
    victims: Sequence[Victim],
    gangs: Mapping[str, VictimGang],
    options: SolveOptions,
    request_: GangRequest,
    reason: str,
) -> None:
    view = busy_view(SPECS, victims if all(v.node in ("z0c0h0", "z0c0h1") for v in victims) else [])
    for plan in (plan_preemption, greedy_preemption):
        result = plan(request_, view, victims, gangs, options)
        assert result.status == Status.INVALID, plan.__name__
        assert reason in result.reason, plan.__name__
        assert not result.evicted and not result.yielded and not result.assignment
