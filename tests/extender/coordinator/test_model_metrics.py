"""What the extender counts of the CP-SAT models its plans need: how many, whether each was proven optimal, and how
long such a plan took (``bench_e2e --real --mix`` reports them)."""

from __future__ import annotations

from scheduler.extender.coordinator.metrics import CoordinatorMetrics
from tests.extender_support import harness, node, pod, podgang

ZONE = "topology.kubernetes.io/zone"


def _models(metrics: CoordinatorMetrics, path: str = "gang") -> dict[str, float]:
    return {proven: metrics.models.labels(path, proven)._value.get() for proven in ("true", "false")}


def _timed(metrics: CoordinatorMetrics) -> float:
    counts = [s.value for m in metrics.model_seconds.collect() for s in m.samples if s.name.endswith("_count")]
    return sum(counts)


def test_a_plan_whose_greedy_misses_the_bound_counts_one_proven_model_and_its_time() -> None:
    # No node has 4 GPUs free, so the gang takes two nodes: n0 + n1 (one clique, two zones) or n0 + n2 (two cliques,
    # one zone). Cliques count first; the tier bounds promise one clique and one zone, which no plan meets, so only
    # a model proves n0 + n1 the best.
    nodes = [
        node("n0", gpus=4, clique="c0", **{ZONE: "z0"}),
        node("n1", gpus=4, clique="c0", **{ZONE: "z1"}),
        node("n2", gpus=4, clique="c1", **{ZONE: "z0"}),
    ]
    used = [pod("u0", gpus=1, node_name="n0"), pod("u1", gpus=3, node_name="n1"), pod("u2", gpus=3, node_name="n2")]
    members = [pod("g-a0", gang="g", gpus=1), pod("g-a1", gang="g", gpus=1), pod("g-b0", gang="g", gpus=2)]
    gang = podgang("g", {"a": (["g-a0", "g-a1"], 2), "b": (["g-b0"], 1)})
    h = harness(nodes=nodes, pods=[*used, *members], podgangs=[gang])
    h.settle()
    metrics = h.coordinator.metrics
    assert _models(metrics) == {"true": 1.0, "false": 0.0}
    assert _timed(metrics) == 1


def test_a_plan_the_greedy_settles_builds_no_model() -> None:
    nodes = [node(f"n{i}", gpus=4, clique="c0") for i in range(2)]
    members = [pod(f"g-w{i}", gang="g", gpus=4) for i in range(2)]
    h = harness(nodes=nodes, pods=members, podgangs=[podgang("g", {"w": (["g-w0", "g-w1"], 2)})])
    h.settle()
    assert h.coordinator.metrics.plans.labels("Placed")._value.get() == 1
    assert _models(h.coordinator.metrics) == {"true": 0.0, "false": 0.0}
    assert _timed(h.coordinator.metrics) == 0


def _crossing(copies: int) -> tuple[list, list, list]:
    """``copies`` of the first test's cluster (each its own zones and clique) and of its gang."""
    nodes, pods, gangs = [], [], []
    for c in range(copies):
        nodes += [
            node(f"n{c}0", gpus=4, clique=f"c{c}0", **{ZONE: f"z{c}0"}),
            node(f"n{c}1", gpus=4, clique=f"c{c}0", **{ZONE: f"z{c}1"}),
            node(f"n{c}2", gpus=4, clique=f"c{c}1", **{ZONE: f"z{c}0"}),
        ]
        pods += [pod(f"u{c}0", gpus=1, node_name=f"n{c}0"), pod(f"u{c}1", gpus=3, node_name=f"n{c}1")]
        pods += [pod(f"u{c}2", gpus=3, node_name=f"n{c}2")]
        pods += [pod(f"g{c}-a0", gang=f"g{c}", gpus=1), pod(f"g{c}-a1", gang=f"g{c}", gpus=1)]
        pods += [pod(f"g{c}-b0", gang=f"g{c}", gpus=2)]
        gangs.append(podgang(f"g{c}", {"a": ([f"g{c}-a0", f"g{c}-a1"], 2), "b": ([f"g{c}-b0"], 1)}))
    return nodes, pods, gangs


def test_a_queue_heads_model_is_counted_on_its_own_path() -> None:
    # Two such gangs waiting together are planned as one queue head: its model is the head's.
    nodes, pods, gangs = _crossing(2)
    h = harness(nodes=nodes, pods=pods, podgangs=gangs)
    h.settle()
    assert _models(h.coordinator.metrics, "head") == {"true": 1.0, "false": 0.0}
    assert _models(h.coordinator.metrics, "gang") == {"true": 0.0, "false": 0.0}
    assert h.coordinator.metrics.plans.labels("Placed")._value.get() == 2
