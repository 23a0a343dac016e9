"""``bench_e2e --real --mix``'s queue: the cluster used as stated, gangs of the stated shapes, objects the API server
and Grove's CRD accept, and the same draws from the same seed."""

from __future__ import annotations

from benchmarks.controlplane.nodes import BLOCK, CLIQUE, GPU, gpu_nodes
from benchmarks.e2e.mix import USED, mix_workload
from tests.crd_schema import CRDS, crd_schema, violations

NODES = gpu_nodes(1008)


def _gpus(pod: dict) -> int:
    return int(pod["spec"]["containers"][0]["resources"]["requests"].get(GPU, "0"))


def test_the_cluster_is_used_as_stated_and_the_queue_fills_what_is_left_as_stated() -> None:
    mix = mix_workload(NODES, seed=1, namespace="bench")
    total = 4 * len(NODES)
    used = sum(_gpus(p) for p in mix.used)
    assert 0.6 * total <= used < 0.6 * total + 8
    per_node: dict[str, int] = {}
    for pod in mix.used:
        assert pod["metadata"]["namespace"] == USED and pod["spec"]["schedulerName"] == "default-scheduler"
        per_node[pod["spec"]["nodeName"]] = per_node.get(pod["spec"]["nodeName"], 0) + _gpus(pod)
    assert max(per_node.values()) <= 4
    assert sum(1 for gpus in per_node.values() if gpus < 4) > 0.1 * len(per_node)  # some nodes partly used
    guaranteed = sum(
        minimum * _gpus(next(p for p in mix.pods if p["metadata"]["name"] in names))
        for groups in mix.guaranteed().values()
        for names, minimum in groups
        if minimum
    )
    assert 0.8 * (total - used) <= guaranteed < 0.8 * (total - used) + 4 * 64


def test_the_queue_holds_the_stated_shapes_and_packs() -> None:
    mix = mix_workload(NODES, seed=1, namespace="bench")
    assert set(mix.kinds) == {"training", "leader-workers", "disaggregated"}
    sizes = [sum(len(names) for names, _ in groups) for groups in mix.guaranteed().values()]
    assert min(sizes) >= 1 and max(sizes) <= 64 and len(set(sizes)) > 5
    assert max(len(g["spec"]["podgroups"]) for g in mix.podgangs) >= 4
    packs = [g["spec"].get("topologyConstraint", {}).get("packConstraint", {}) for g in mix.podgangs]
    assert {CLIQUE, BLOCK} <= {p.get("required") for p in packs}
    assert {CLIQUE, BLOCK} <= {p.get("preferred") for p in packs}
    assert any("topologyConstraintGroupConfigs" in g["spec"] for g in mix.podgangs)
    assert any(m < len(names) for groups in mix.guaranteed().values() for names, m in groups)  # best-effort pods


def test_every_object_is_one_the_api_server_takes_as_sent() -> None:
    mix = mix_workload(NODES, seed=1, namespace="bench")
    schema = crd_schema(CRDS / "podgang.yaml")
    assert {g["metadata"]["name"]: violations(g, schema) for g in mix.podgangs if violations(g, schema)} == {}
    for obj in [*mix.podgangs, *mix.pods, *mix.used]:
        assert "uid" not in obj["metadata"] and "status" not in obj
    assert all(c.get("image") for p in [*mix.pods, *mix.used] for c in p["spec"]["containers"])
    listed = {ref["name"] for g in mix.podgangs for group in g["spec"]["podgroups"] for ref in group["podReferences"]}
    assert listed == {p["metadata"]["name"] for p in mix.pods}


def test_the_same_seed_draws_the_same_cluster_and_queue_and_another_seed_another() -> None:
    one, again, other = (mix_workload(NODES, seed=s, namespace="bench") for s in (1, 1, 2))
    assert (one.used, one.podgangs, one.pods) == (again.used, again.podgangs, again.pods)
    assert one.pods != other.pods
