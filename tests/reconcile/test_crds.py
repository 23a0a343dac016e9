"""The PodClique and PodCliqueScalingGroup CRDs: Grove's names, short names and scale paths, and a schema that
keeps every field the reconciler writes (spec on create, status on the subresource)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.reconcile.memory_client import InMemoryApi
from tests.crd_schema import CRDS, crd_schema, pruned, violations
from tests.reconcile.examples import cluster, example, reconciler


def _crd(name: str) -> dict[str, Any]:
    (crd,) = [doc for doc in yaml.safe_load_all((CRDS / f"{name}.yaml").read_text()) if doc]
    return crd


@pytest.mark.parametrize(
    ("name", "kind", "short", "selector"),
    [
        ("podclique", "PodClique", "pclq", ".status.hpaPodSelector"),
        ("podcliquescalinggroup", "PodCliqueScalingGroup", "pcsg", ".status.selector"),
    ],
)
def test_crd_has_groves_names_and_a_scale_subresource_for_kubectl_and_hpas(
    name: str, kind: str, short: str, selector: str
) -> None:
    crd = _crd(name)
    spec = crd["spec"]
    assert (spec["group"], spec["scope"], spec["names"]["kind"], spec["names"]["shortNames"]) == (
        "grove.io",
        "Namespaced",
        kind,
        [short],
    )
    (version,) = spec["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"]["status"] == {}
    # Grove's kubebuilder markers: specpath=.spec.replicas, statuspath=.status.replicas, selectorpath=…
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": selector,
    }


_BREACHED = '.status.conditions[?(@.type=="MinAvailableBreached")].status'
_PROGRESS = ".status.updateProgress."
_AGE = ("Age", ".metadata.creationTimestamp", 0)


@pytest.mark.parametrize(
    ("name", "columns"),
    [
        pytest.param(
            "podclique",
            [("MinAvail", ".spec.minAvailable", 0), ("Replicas", ".spec.replicas", 0),
             ("Ready", ".status.readyReplicas", 0), ("Scheduled", ".status.scheduledReplicas", 0),
             ("Updated", ".status.updatedReplicas", 0), ("Gated", ".status.scheduleGatedReplicas", 1),
             ("MinBreached", _BREACHED, 1), _AGE],
            id="grove.io_podcliques.yaml",
        ),
        pytest.param(
            "podcliquescalinggroup",
            [("MinAvail", ".spec.minAvailable", 0), ("Replicas", ".spec.replicas", 0),
             ("Available", ".status.availableReplicas", 0), ("Scheduled", ".status.scheduledReplicas", 0),
             ("Updated", ".status.updatedReplicas", 0),
             ("PCLQs-Updated", f"{_PROGRESS}updatedPodCliquesCount", 0),
             ("PCLQs-Total", f"{_PROGRESS}totalPodCliquesCount", 0), ("MinBreached", _BREACHED, 1), _AGE],
            id="grove.io_podcliquescalinggroups.yaml",
        ),
        pytest.param(
            "podcliqueset",
            [("Replicas", ".spec.replicas", 0), ("Available", ".status.availableReplicas", 0),
             ("Updated", ".status.updatedReplicas", 0),
             ("PCLQs-Updated", f"{_PROGRESS}updatedPodCliquesCount", 0),
             ("PCLQs-Total", f"{_PROGRESS}totalPodCliquesCount", 0),
             ("PCSGs-Updated", f"{_PROGRESS}updatedPodCliqueScalingGroupsCount", 0),
             ("PCSGs-Total", f"{_PROGRESS}totalPodCliqueScalingGroupsCount", 0),
             # Not Grove's: whether the reconciler accepted the spec, which Grove's webhook would have refused.
             ("Valid", '.status.conditions[?(@.type=="SpecValid")].status', 0), _AGE],
            id="grove.io_podcliquesets.yaml",
        ),
    ],
)  # fmt: skip
def test_printer_columns_are_groves_once_each_in_groves_order(name: str, columns: list[tuple[str, str, int]]) -> None:
    (version,) = _crd(name)["spec"]["versions"]
    shipped = [(c["name"], c["jsonPath"], c.get("priority", 0)) for c in version["additionalPrinterColumns"]]
    assert shipped == columns


def _converged() -> InMemoryApi:
    document = example("training-scaled")  # standalone cliques, a scaling group, scaled gangs, startup order
    document["spec"]["template"]["podCliqueScalingGroups"][0]["scaleConfig"] = {"maxReplicas": 5}
    api = cluster(document)
    reconciler(api).converge()
    for pod in api.of_kind("Pod"):
        if not pod["spec"].get("schedulingGates"):
            api.bind_pod("default", pod["metadata"]["name"], "node-a")
    reconciler(api).converge()
    return api


@pytest.mark.parametrize(
    ("kind", "crd"), [("PodClique", "podclique"), ("PodCliqueScalingGroup", "podcliquescalinggroup")]
)
def test_objects_and_status_the_reconciler_writes_survive_the_schema(kind: str, crd: str) -> None:
    schema = crd_schema(CRDS / f"{crd}.yaml")
    objects = _converged().of_kind(kind)
    assert objects and all(obj.get("status") for obj in objects)
    for obj in objects:
        assert pruned(obj, schema) == [], obj["metadata"]["name"]
        assert violations(obj, schema) == [], obj["metadata"]["name"]


def test_shipped_crds_parse_as_single_documents() -> None:
    for path in sorted(Path(CRDS).glob("*.yaml")):
        assert len([d for d in yaml.safe_load_all(path.read_text()) if d]) == 1, path
