"""Odd but legal inputs: every policy answers with a sound result, never an exception."""

from __future__ import annotations

import pytest

from placement import POLICIES, ClusterView, GangRequest, GroupRequest, SolveOptions, Status, solve, violations
from tests.placement.cluster import CLIQUE, gang, group, hosts, pack, view
from topology import HostSpec, Topology

EMPTY = ClusterView(Topology([]), {})


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize(
    ("request_", "cluster"),
    [
        pytest.param(gang(group("w", 2)), EMPTY, id="no-nodes"),
        pytest.param(gang(group("w", 2, min_replicas=0)), EMPTY, id="nothing-required-no-nodes"),
        pytest.param(gang(group("w", 0)), view(hosts()), id="empty-group"),
        pytest.param(GangRequest("ns", "g", (GroupRequest("w", ("ns/a",), {}, 1),)), view(hosts()), id="no-demand"),
        pytest.param(
            GangRequest("ns", "g", (GroupRequest("w", ("ns/a",), {"example.com/fpga": 1}, 1),)),
            view(hosts()),
            id="resource-nobody-has",
        ),
        pytest.param(
            gang(group("w", 2, min_replicas=0), packs=[pack("w", required=CLIQUE)]),
            view([HostSpec("bare", {}, {"nvidia.com/gpu": 8})]),
            id="optional-scope-without-labels",
        ),
        pytest.param(gang(group("w", 1, eligible=["ghost"])), view(hosts()), id="eligible-node-not-in-view"),
    ],
)
def test_odd_inputs_get_sound_answers(policy: str, request_: GangRequest, cluster: ClusterView) -> None:
    result = solve(request_, cluster, SolveOptions(policy=policy))
    assert result.status in (Status.PLACED, Status.INFEASIBLE)
    partial = policy in ("first-fit", "spread")
    assert violations(request_, cluster, result, partial_ok=partial, packs_ok=partial) == []


def test_nothing_guaranteed_needs_no_model() -> None:
    """A gang whose groups all have minReplicas 0 is placed (empty) without a CP-SAT model: a model of nothing
    can still time out on a loaded machine, which made the odd-inputs case above flaky."""
    result = solve(gang(group("w", 2, min_replicas=0)), EMPTY, SolveOptions(policy="cpsat", time_limit_seconds=0.001))
    assert result.status is Status.PLACED
    assert result.objective_parts["models"] == 0
