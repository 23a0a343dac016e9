"""The ``cpsat`` policy's time-limit paths and its neighbourhood model, driven by an injected clock.

``SteppingClock(10)`` makes every reading 10 s after the last, so each deadline has passed by the time it is
checked (whatever the time limit); ``SteppingClock(0)`` stands still, so none ever passes. CP-SAT itself still
stops on its own wall-clock limit, which these small models never reach.
"""

from __future__ import annotations

import pytest

from placement import ClusterView, GangRequest, GroupRequest, PackScope, SolveOptions, Status, solve, violations
from placement.cpsat.solver import ModelOutcome
from placement.request import FLOOR_MISMATCH
from topology import HostSpec, Topology

GPU = "nvidia.com/gpu"
CLIQUE = "nvidia.com/gpu.clique"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


class SteppingClock:
    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        reading = self.now
        self.now += self.step
        return reading


def late() -> SolveOptions:
    return SolveOptions(clock=SteppingClock(10.0))


def on_time() -> SolveOptions:
    return SolveOptions(clock=SteppingClock(0.0))


def cluster(free: dict[str, int], labels: dict[str, dict[str, str]]) -> ClusterView:
    specs = [HostSpec(name, {HOSTNAME: name, **labels[name]}, {GPU: 4, "cpu": 2000}) for name in free]
    return ClusterView(Topology(specs), {name: {GPU: units, "cpu": 2000} for name, units in free.items()})


# A clique that crosses two zones (the labels allow it). The gang needs 4 GPUs and no node has more than 3, so it
# takes two nodes: n0 + n1 (one clique, two zones) or n0 + n2 (two cliques, one zone). Cliques count first, so
# n0 + n1 is best; but the tier bounds, taken level by level, promise one clique *and* one zone, which no plan
# meets, so only the model can prove the plan optimal.
CROSSING = cluster(
    {"n0": 3, "n1": 1, "n2": 1},
    {"n0": {ZONE: "z0", CLIQUE: "c0"}, "n1": {ZONE: "z1", CLIQUE: "c0"}, "n2": {ZONE: "z0", CLIQUE: "c1"}},
)
TWO_GROUPS = GangRequest(
    "ns", "g", (GroupRequest("a", ("ns/a0", "ns/a1"), {GPU: 1}, 2), GroupRequest("b", ("ns/b0",), {GPU: 2}, 1))
)


def test_with_time_the_model_proves_the_plan_optimal() -> None:
    result = solve(TWO_GROUPS, CROSSING, on_time())
    assert result.status == Status.PLACED and violations(TWO_GROUPS, CROSSING, result) == []
    assert result.objective_parts["optimal"] == 1 and result.objective_parts["models"] == 1


def test_out_of_time_the_greedy_plan_stands_unproven() -> None:
    result = solve(TWO_GROUPS, CROSSING, late())
    assert result.status == Status.PLACED and violations(TWO_GROUPS, CROSSING, result) == []
    assert result.objective_parts["models"] == 0  # no time left to build one
    assert result.objective_parts["optimal"] == 0 and result.bound == 1.0  # nothing better was ruled out


def test_the_neighbourhood_model_proves_nothing_beyond_its_neighbourhood() -> None:
    # model_nodes=1: the model is built on the greedy plan's NVLink domain (c0: n0, n1) alone. It finds the best
    # plan there, which here is also the best overall, but cannot claim so: n2 (c1) was never looked at.
    near = solve(TWO_GROUPS, CROSSING, SolveOptions(model_nodes=1))
    whole = solve(TWO_GROUPS, CROSSING, SolveOptions(model_nodes=600))
    assert near.status == Status.PLACED and violations(TWO_GROUPS, CROSSING, near) == []
    assert set(near.assignment.values()) <= {"n0", "n1"}
    assert near.objective_parts["models"] == 1 and near.objective_parts["optimal"] == 0 and near.bound == 1.0
    assert whole.objective_parts["optimal"] == 1 and whole.bound == whole.placement_score


# Two nodes of 4 free GPUs per clique; 2 pods × 3 GPUs and 1 × 2: 8 GPUs on 8 free and each group fits on its
# own, so capacity sums cannot refuse it, yet the 3-GPU pods leave 1 + 1 and the 2-GPU pod fits nowhere.
FRAGMENTED = GangRequest(
    "ns", "g", (GroupRequest("x", ("ns/x0", "ns/x1"), {GPU: 3}, 2), GroupRequest("y", ("ns/y0",), {GPU: 2}, 1))
)


def fragmented_cliques(count: int) -> ClusterView:
    names = [f"c{c}h{h}" for c in range(count) for h in range(2)]
    return cluster(dict.fromkeys(names, 4), {n: {ZONE: "z0", CLIQUE: n[:2]} for n in names})


@pytest.mark.parametrize("packs", [(), (PackScope(("x", "y"), required=CLIQUE),)], ids=["no-pack", "per-clique"])
def test_with_time_fragmentation_is_proven_infeasible(packs: tuple[PackScope, ...]) -> None:
    request = GangRequest("ns", "g", FRAGMENTED.groups, packs)
    result = solve(request, fragmented_cliques(1 if not packs else 4), on_time())
    assert result.status == Status.INFEASIBLE and "pods fragment across nodes" in result.reason
    assert result.assignment == {}


@pytest.mark.parametrize("packs", [(), (PackScope(("x", "y"), required=CLIQUE),)], ids=["no-pack", "per-clique"])
def test_out_of_time_an_unplaced_gang_is_timed_out_not_refused(packs: tuple[PackScope, ...]) -> None:
    # Past the deadline nothing proves the gang cannot fit: the greedy found no plan (in at most a few of the four
    # cliques), no model ran, and the answer says so instead of claiming infeasibility.
    request = GangRequest("ns", "g", FRAGMENTED.groups, packs)
    result = solve(request, fragmented_cliques(1 if not packs else 4), late())
    assert result.status == Status.TIMED_OUT and result.reason.startswith("no plan found within")
    assert result.assignment == {}


def test_out_of_time_a_required_domain_keeps_its_bound_for_the_score() -> None:
    # Gang-wide required clique; only c2 (n1 in z0, n2 in z1) has free GPUs. Group b may only use n2. The best
    # plan puts both pods on n2 (one zone); the greedy puts a on n1 (two zones). Past the deadline the greedy plan
    # is taken unproven, and the score measures it against c2's bound (one zone): (1 + 1) / (1 + 2) = 2/3.
    request = GangRequest(
        "ns",
        "g",
        (GroupRequest("a", ("ns/a0",), {GPU: 1}, 1), GroupRequest("b", ("ns/b0",), {GPU: 1}, 1, frozenset({"n2"}))),
        (PackScope(("a", "b"), required=CLIQUE),),
    )
    view = cluster(
        {"n0": 0, "n1": 2, "n2": 2, "n3": 0},
        {
            "n0": {ZONE: "z0", CLIQUE: "c0"},
            "n1": {ZONE: "z0", CLIQUE: "c2"},
            "n2": {ZONE: "z1", CLIQUE: "c2"},
            "n3": {ZONE: "z0", CLIQUE: "c0"},
        },
    )
    hurried = solve(request, view, late())
    assert hurried.status == Status.PLACED and violations(request, view, hurried) == []
    assert hurried.objective_parts["optimal"] == 0 and hurried.objective_parts["span:zone"] == 2
    assert hurried.placement_score == pytest.approx(2 / 3)
    calm = solve(request, view, on_time())
    assert calm.objective_parts["optimal"] == 1 and calm.objective_parts["span:zone"] == 1
    assert calm.placement_score == 1.0


def test_a_model_that_disagrees_with_the_greedy_leaves_the_greedy_plan_standing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The tier bound is imposed on the model as a floor so it can stop early, so a bound that is wrong, or a model
    # that disagrees with the greedy, reads as "infeasible" (the model's answer is forced here: no correct pair of
    # bound and model produces it). The greedy holds a valid plan: it stands, unproven, and the disagreement is
    # logged and reported rather than refusing a gang that fits.
    import placement.cpsat.policy as policy

    monkeypatch.setattr(policy, "solve_model", lambda *args, **kwargs: ModelOutcome("infeasible"))
    with caplog.at_level("WARNING", logger="placement.cpsat.policy"):
        result = solve(TWO_GROUPS, CROSSING, on_time())
    assert result.status == Status.PLACED and violations(TWO_GROUPS, CROSSING, result) == []
    assert result.objective_parts[FLOOR_MISMATCH] == 1 and result.objective_parts["optimal"] == 0
    assert "the greedy plan stands" in caplog.text
