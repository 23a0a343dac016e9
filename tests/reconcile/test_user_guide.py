"""The Grove user guide's hands-on commands (PodCliqueScalingGroup guide, examples 3 and 4), against the fake API
server with the real reconcile loop and watches: `kubectl get pcs,pclq,pcsg,pg,pods`, `kubectl scale pcsg …`
and `kubectl scale pclq …` behave as the guide shows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.sim.fakeapi import PODGANGS, PODS, FakeApiServer
from tests.reconcile.deployed import reconciling, until
from tests.reconcile.examples import POD_NAME, example
from tests.reconcile.kubectl import Kubectl

PCS = "multinode-aggregated"
PART_OF = f"app.kubernetes.io/part-of={PCS}"


@pytest.fixture
def cluster() -> Iterator[tuple[FakeApiServer, Kubectl]]:
    """A fake API server with the reconciler running against it (watches and the loop), as deployed."""
    with reconciling() as deployed:
        yield deployed


def _cliques(pods: list[dict[str, Any]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for pod in pods:
        match = POD_NAME.match(pod["metadata"]["name"])
        assert match, pod["metadata"]["name"]
        counts[match["clique"]] += 1
    return counts


def test_example_3_multinode_aggregated_get_then_scale_pcsg_then_scale_pclq(
    cluster: tuple[FakeApiServer, Kubectl],
) -> None:
    server, kubectl = cluster
    server.apply(example(PCS))  # kubectl apply -f multi-node-aggregated.yaml
    until(lambda: len(kubectl.get("pods", selector=PART_OF)["pods"]) == 8)
    # "2 model instances, each with 1 leader + 3 workers": 2 × (1 + 3) = 8 pods, named <pcs>-0-<pcsg>-<i>-<clique>-xxxxx
    assert _cliques(kubectl.get("pods", selector=PART_OF)["pods"]) == {
        f"{PCS}-0-model-instance-0-leader": 1,
        f"{PCS}-0-model-instance-0-worker": 3,
        f"{PCS}-0-model-instance-1-leader": 1,
        f"{PCS}-0-model-instance-1-worker": 3,
    }
    expected = {
        "pcs": [PCS],
        "pclq": [
            f"{PCS}-0-model-instance-0-leader",
            f"{PCS}-0-model-instance-0-worker",
            f"{PCS}-0-model-instance-1-leader",
            f"{PCS}-0-model-instance-1-worker",
        ],
        "pcsg": [f"{PCS}-0-model-instance"],
        "pg": [f"{PCS}-0", f"{PCS}-0-model-instance-0"],  # instance 0 in the base gang, instance 1 scaled
    }
    until(lambda: kubectl.names_of("pcs,pclq,pcsg,pg") == expected)  # `kubectl get pcs,pclq,pcsg,pg`

    # kubectl scale pcsg multinode-aggregated-0-model-instance --replicas=3: a third "super-pod" of 1 + 3
    scale = kubectl.scale("pcsg", f"{PCS}-0-model-instance", replicas=3)
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 3
    until(lambda: len(kubectl.get("pods", selector=PART_OF)["pods"]) == 12)
    counts = _cliques(kubectl.get("pods", selector=PART_OF)["pods"])
    assert counts[f"{PCS}-0-model-instance-2-leader"] == 1 and counts[f"{PCS}-0-model-instance-2-worker"] == 3
    until(lambda: len(kubectl.names_of("pclq")["pclq"]) == 6)
    until(
        lambda: kubectl.names_of("pg")["pg"] == [f"{PCS}-0", f"{PCS}-0-model-instance-0", f"{PCS}-0-model-instance-1"]
    )
    until(lambda: kubectl.get("pcsg")["pcsg"][0].get("status", {}).get("replicas") == 3)
    group_scale = kubectl.scale("pcsg", f"{PCS}-0-model-instance", replicas=3)
    assert group_scale["status"] == {
        "replicas": 3,
        "selector": f"app.kubernetes.io/managed-by=grove-operator,"
        f"{PART_OF},grove.io/podcliquescalinggroup={PCS}-0-model-instance",
    }

    # kubectl scale pclq multinode-aggregated-0-model-instance-0-worker --replicas=4: one more worker in instance 0
    kubectl.scale("pclq", f"{PCS}-0-model-instance-0-worker", replicas=4)
    until(lambda: len(kubectl.get("pods", selector=PART_OF)["pods"]) == 13)
    assert _cliques(kubectl.get("pods", selector=PART_OF)["pods"])[f"{PCS}-0-model-instance-0-worker"] == 4
    # The new worker joins the base gang, best-effort: the PodGroup lists 4 pods and still guarantees 3.
    until(lambda: _group(server, f"{PCS}-0", f"{PCS}-0-model-instance-0-worker")["podReferences"].__len__() == 4)
    assert _group(server, f"{PCS}-0", f"{PCS}-0-model-instance-0-worker")["minReplicas"] == 3
    worker = next(c for c in kubectl.get("pclq")["pclq"] if c["metadata"]["name"].endswith("instance-0-worker"))
    assert worker["spec"]["replicas"] == 4

    # kubectl delete pcs multinode-aggregated: the operator (here the garbage collector) tears everything down
    server.delete("grove.io/v1alpha1/podcliquesets", PCS, "default")
    until(lambda: not server.objects(PODS))


def _group(server: FakeApiServer, gang: str, clique: str) -> dict[str, Any]:
    found = server.get(PODGANGS, gang, "default")
    assert found is not None
    return next(g for g in found["spec"]["podgroups"] if g["name"] == clique)


def test_example_4_disaggregated_scales_prefill_and_decode_independently(
    cluster: tuple[FakeApiServer, Kubectl],
) -> None:
    server, kubectl = cluster
    name = "multinode-disaggregated"
    server.apply(example(name))
    # prefill 2 × (1 + 4) + decode 1 × (1 + 2) = 13 pods
    until(lambda: len(kubectl.get("pods", selector=f"app.kubernetes.io/part-of={name}")["pods"]) == 13)
    until(lambda: kubectl.names_of("pcsg")["pcsg"] == [f"{name}-0-decode", f"{name}-0-prefill"])
    kubectl.scale("pcsg", f"{name}-0-decode", replicas=2)  # + 1 decode replica of 1 + 2
    until(lambda: len(kubectl.get("pods", selector=f"app.kubernetes.io/part-of={name}")["pods"]) == 16)
    kubectl.scale("pcsg", f"{name}-0-prefill", replicas=1)  # − 1 prefill replica of 1 + 4
    until(lambda: len(kubectl.get("pods", selector=f"app.kubernetes.io/part-of={name}")["pods"]) == 11)
    until(lambda: kubectl.names_of("pg")["pg"] == [f"{name}-0", f"{name}-0-decode-0"])


def test_a_whole_pcs_scales_through_its_scale_subresource_with_groves_pod_selector(
    cluster: tuple[FakeApiServer, Kubectl],
) -> None:
    # Grove's podcliqueset reconcilestatus.go (mutateSelector) and the CRD's scale subresource
    # (labelSelectorPath .status.hpaPodSelector): what an HPA on a PodCliqueSet reads and writes.
    server, kubectl = cluster
    server.apply(example(PCS))
    until(lambda: len(kubectl.get("pods", selector=PART_OF)["pods"]) == 8)
    selector = f"app.kubernetes.io/managed-by=grove-operator,{PART_OF}"
    until(lambda: kubectl.get("pcs")["pcs"][0].get("status", {}).get("hpaPodSelector") == selector)
    scale = kubectl.scale("pcs", PCS, replicas=2)
    assert scale["status"]["selector"] == selector
    until(lambda: len(kubectl.get("pods", selector=selector)["pods"]) == 16)  # the selector finds every pod
    assert {p["metadata"]["labels"]["grove.io/podcliqueset-replica-index"] for p in server.objects(PODS)} == {"0", "1"}
