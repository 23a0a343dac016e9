"""Each hard-constraint module of the CP-SAT model on its own: a case it lets through and a case it refuses.

The model is built with only the constraint under test (plus the counts' own domains), the group totals are
forced where the case needs it, and the solver's verdict is checked; the refused case is also shown solvable
without the constraint, so it is that module, not something else, that refuses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ortools.sat.python import cp_model

from placement import ClusterView, GangRequest, violations
from placement.cpsat.capacity import add_capacity
from placement.cpsat.min_replicas import add_min_replicas
from placement.cpsat.required_pack import add_required_pack
from placement.model_vars import ModelVars
from placement.objective import assignment_of
from placement.problem import prepare
from placement.request import Result, Status
from tests.placement.cluster import CLIQUE, gang, group, hosts, pack, view

Constraint = Callable[[ModelVars], None]


def solve_with(
    request: GangRequest, cluster: ClusterView, constraints: list[Constraint], totals: Mapping[int, int]
) -> tuple[bool, dict[str, str]]:
    """Build the model with ``constraints`` only, fix group ``g``'s total to ``totals[g]``; feasible? and the
    plan as a pod → node assignment."""
    problem = prepare(request, cluster)
    mv = ModelVars.build(problem)
    for add in constraints:
        add(mv)
    for g, total in totals.items():
        mv.model.add(mv.total[g] == total)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    status = solver.solve(mv.model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        assert status == cp_model.INFEASIBLE
        return False, {}
    counts = {key: solver.value(var) for key, var in mv.count.items() if solver.value(var) > 0}
    return True, assignment_of(problem, counts)


def test_capacity_lets_groups_share_a_node_they_fit_together() -> None:
    # One 8-GPU node: 3 + 4 + 1 = 8 GPUs of three groups fit together.
    cluster = view(hosts(cliques=1, per_clique=1))
    request = gang(group("a", 1, gpus=3), group("b", 1, gpus=4), group("c", 1, gpus=1))
    ok, assignment = solve_with(request, cluster, [add_capacity], {0: 1, 1: 1, 2: 1})
    assert ok
    assert violations(request, cluster, Result(Status.PLACED, assignment, placement_score=1.0)) == []


def test_capacity_refuses_groups_that_overrun_a_node_together() -> None:
    # One 8-GPU node: 5 + 4 = 9 GPUs; each group fits alone (its own cap), only the shared row refuses them.
    cluster = view(hosts(cliques=1, per_clique=1))
    request = gang(group("a", 1, gpus=5), group("b", 1, gpus=4))
    assert solve_with(request, cluster, [], {0: 1, 1: 1})[0]
    assert not solve_with(request, cluster, [add_capacity], {0: 1, 1: 1})[0]


def test_min_replicas_places_at_least_the_minimum() -> None:
    # 3 pods, 2 guaranteed, room for all: the total lies in [2, 3].
    cluster = view(hosts())
    request = gang(group("w", 3, gpus=8, min_replicas=2))
    ok, assignment = solve_with(request, cluster, [add_min_replicas], {})
    assert ok and 2 <= len(assignment) <= 3


def test_min_replicas_refuses_a_total_below_the_minimum() -> None:
    cluster = view(hosts())
    request = gang(group("w", 3, gpus=8, min_replicas=2))
    assert solve_with(request, cluster, [], {0: 1})[0]
    assert not solve_with(request, cluster, [add_min_replicas], {0: 1})[0]


def test_required_pack_keeps_the_scope_in_one_domain() -> None:
    # Four 4-GPU pods fit one clique (2 nodes × 8 GPUs = 16 = 4 × 4), or spread over both without the pack.
    cluster = view(hosts())
    request = gang(group("w", 4, gpus=4), packs=[pack("w", required=CLIQUE)])
    ok, assignment = solve_with(request, cluster, [add_required_pack], {0: 4})
    assert ok and len({node[:4] for node in assignment.values()}) == 1  # z0c0h0 → clique z0c0


def test_required_pack_refuses_a_scope_no_domain_holds() -> None:
    # Five 4-GPU pods: 20 GPUs > 16 in either clique, fine across both.
    cluster = view(hosts())
    request = gang(group("w", 5, gpus=4), packs=[pack("w", required=CLIQUE)])
    assert solve_with(request, cluster, [], {0: 5})[0]
    assert not solve_with(request, cluster, [add_required_pack], {0: 5})[0]


def test_required_pack_with_nothing_guaranteed_may_place_nothing() -> None:
    # minReplicas 0: the pack asks for at most one domain, not exactly one.
    cluster = view(hosts())
    request = gang(group("w", 2, gpus=4, min_replicas=0), packs=[pack("w", required=CLIQUE)])
    assert solve_with(request, cluster, [add_required_pack], {0: 0})[0]
