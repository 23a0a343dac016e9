"""HPAs for autoScalingConfig and scaleConfig, as Grove's controllers make them, against the in-memory API."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.reconcile.memory_client import InMemoryApi
from tests.reconcile.examples import cluster, example, reconciler

NS = "default"


def _converged(document: dict[str, Any]) -> InMemoryApi:
    api = cluster(document)
    reconciler(api).converge()
    return api


@pytest.mark.parametrize("replicas", [1, 2])
def test_autoscaling_configs_become_hpas_targeting_the_scale_subresource(replicas: int) -> None:
    # Grove's hpa.go: one autoscaling/v2 HPA per PCS replica and configured clique or group, named after its target.
    document = example("multinode-disaggregated")
    document["spec"]["replicas"] = replicas
    document["spec"]["template"]["podCliqueScalingGroups"][0]["scaleConfig"] = {
        "maxReplicas": 4,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
            }
        ],
    }
    api = _converged(document)
    hpas = api.of_kind("HorizontalPodAutoscaler")
    assert [h["metadata"]["name"] for h in hpas] == [f"multinode-disaggregated-{r}-prefill" for r in range(replicas)]
    spec = hpas[0]["spec"]
    assert spec["scaleTargetRef"] == {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueScalingGroup",
        "name": "multinode-disaggregated-0-prefill",
    }
    assert (spec["minReplicas"], spec["maxReplicas"]) == (2, 4)  # minReplicas defaults to the group's replicas
    assert spec["metrics"][0]["resource"]["name"] == "cpu"
    assert hpas[0]["metadata"]["labels"]["app.kubernetes.io/component"] == "pcs-hpa"
    # The HPA acts through the scale subresource; the reconciler follows the count.
    api.scale("PodCliqueScalingGroup", namespace=NS, name="multinode-disaggregated-0-prefill", replicas=4)
    reconciler(api).converge()
    prefill = [p for p in api.of_kind("Pod") if p["metadata"]["name"].startswith("multinode-disaggregated-0-prefill-")]
    assert len(prefill) == 4 * 5  # 4 group replicas × (1 leader + 4 workers)


def test_clique_autoscaling_config_targets_the_podclique_and_goes_when_removed() -> None:
    document = example("training-scaled")
    document["spec"]["replicas"] = 1
    document["spec"]["template"]["cliques"][1]["spec"]["autoScalingConfig"] = {"maxReplicas": 3}  # coordinator
    api = _converged(document)
    (hpa,) = api.of_kind("HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["kind"] == "PodClique"
    assert hpa["spec"]["scaleTargetRef"]["name"] == "training-0-coordinator"
    coordinator = api.objects[("PodClique", NS, "training-0-coordinator")]
    assert coordinator["status"]["hpaPodSelector"] == (
        "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=training,"
        "grove.io/podclique=training-0-coordinator"
    )
    del document["spec"]["template"]["cliques"][1]["spec"]["autoScalingConfig"]
    api.apply(document)
    reconciler(api).converge()
    assert not api.of_kind("HorizontalPodAutoscaler")
