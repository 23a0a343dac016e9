"""Grove CRDs keep every field they do not model, so an object written back is the object read."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from api.grove import ClusterTopologyBinding, PodCliqueSet, PodGang
from tests.builders import make_podgang

PODGANG: dict[str, Any] = {
    "apiVersion": "scheduler.grove.io/v1alpha1",
    "kind": "PodGang",
    "metadata": {
        "name": "infer-0",
        "namespace": "default",
        "uid": "0b7c",
        "generation": 3,
        "resourceVersion": "812",
        "creationTimestamp": "2026-11-25T22:04:29Z",
        "labels": {"app.kubernetes.io/managed-by": "grove-operator", "grove.io/scheduler-name": "grove"},
        "annotations": {"grove.io/topology-name": "grove-topology"},
        "ownerReferences": [{"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "name": "infer", "uid": "1"}],
        "managedFields": [{"manager": "grove-operator", "operation": "Apply"}],
    },
    "spec": {
        "podgroups": [
            {
                "name": "infer-0-model-0-leader",
                "podReferences": [{"namespace": "default", "name": "infer-0-model-0-leader-0x"}],
                "minReplicas": 1,
                "futurePodGroupField": {"x": 1},
            },
            {
                "name": "infer-0-model-0-worker",
                "podReferences": [
                    {"namespace": "default", "name": "infer-0-model-0-worker-0x"},
                    {"namespace": "default", "name": "infer-0-model-0-worker-1x"},
                ],
                "minReplicas": 2,
                "topologyConstraint": {"packConstraint": {"required": "kubernetes.io/hostname"}},
            },
        ],
        "topologyConstraint": {"packConstraint": {"preferred": "nvidia.com/gpu.clique"}},
        "topologyConstraintGroupConfigs": [
            {
                "name": "infer-0-model-0",
                "podGroupNames": ["infer-0-model-0-leader", "infer-0-model-0-worker"],
                "topologyConstraint": {"packConstraint": {"required": "network.topology.nvidia.com/block"}},
            }
        ],
        "priorityClassName": "high",
        "someNewSpecField": ["kept"],
    },
    "status": {
        "phase": "Pending",
        "conditions": [
            {
                "type": "Initialized",
                "status": "False",
                "reason": "PodGangPodsCreationPending",
                "lastTransitionTime": "2026-11-25T22:04:29Z",
            }
        ],
        "unmodelled": True,
    },
}


def test_podgang_round_trips_with_unknown_fields_kept() -> None:
    gang = PodGang.model_validate(copy.deepcopy(PODGANG))
    assert gang.to_json_dict() == PODGANG
    assert gang.key == "default/infer-0"
    assert gang.spec.podgroups[1].topologyConstraint is not None
    pack = gang.spec.podgroups[1].topologyConstraint.packConstraint
    assert pack is not None and pack.required == "kubernetes.io/hostname"


def test_podgang_needs_podgroups_and_non_negative_min_replicas() -> None:
    broken = copy.deepcopy(PODGANG)
    del broken["spec"]["podgroups"]
    with pytest.raises(ValidationError, match="podgroups"):
        PodGang.model_validate(broken)
    negative = copy.deepcopy(PODGANG)
    negative["spec"]["podgroups"][0]["minReplicas"] = -1
    with pytest.raises(ValidationError, match="minReplicas"):
        PodGang.model_validate(negative)


def test_builder_podgang_is_a_valid_podgang() -> None:
    gang = (
        make_podgang("g")
        .ns("team")
        .group("c", pods=["p0", "other/p1"], min_replicas=1, required="kubernetes.io/hostname")
        .group_config("cfg", groups=["c"], preferred="nvidia.com/gpu.clique")
        .pack(required="topology.kubernetes.io/zone")
        .obj()
    )
    assert [(r.namespace, r.name) for r in gang.spec.podgroups[0].podReferences] == [("team", "p0"), ("other", "p1")]
    assert gang.spec.topologyConstraintGroupConfigs[0].podGroupNames == ["c"]


PODCLIQUESET: dict[str, Any] = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "PodCliqueSet",
    "metadata": {"name": "multinode-aggregated", "namespace": "default"},
    "spec": {
        "replicas": 1,
        "updateStrategy": {"type": "RollingRecreate"},
        "template": {
            "cliques": [
                {
                    "name": "leader",
                    "topologyConstraint": {"pack": {"required": "host"}},
                    "spec": {
                        "roleName": "leader",
                        "replicas": 1,
                        "minAvailable": 1,
                        "podSpec": {"containers": [{"name": "l", "image": "nginx", "resources": {}}]},
                    },
                },
                {
                    "name": "worker",
                    "spec": {"roleName": "worker", "replicas": 3, "podSpec": {"containers": []}},
                    "resourceSharing": [{"name": "shared"}],
                },
            ],
            "headlessServiceConfig": {"publishNotReadyAddresses": True},
            "topologyConstraint": {"topologyName": "grove-topology", "pack": {"preferred": "rack"}},
            "podCliqueScalingGroups": [
                {"name": "model-instance", "cliqueNames": ["leader", "worker"], "replicas": 2, "minAvailable": 1}
            ],
        },
    },
}


def test_podcliqueset_round_trips_with_unknown_fields_kept() -> None:
    pcs = PodCliqueSet.model_validate(copy.deepcopy(PODCLIQUESET))
    assert pcs.to_json_dict() == PODCLIQUESET
    assert pcs.spec.template.podCliqueScalingGroups[0].cliqueNames == ["leader", "worker"]
    assert pcs.spec.template.cliques[1].spec.replicas == 3


CTB: dict[str, Any] = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "ClusterTopologyBinding",
    "metadata": {"name": "grove-topology"},
    "spec": {
        "levels": [
            {"domain": "zone", "key": "topology.kubernetes.io/zone"},
            {"domain": "rack", "key": "nvidia.com/gpu.clique"},
            {"domain": "host", "key": "kubernetes.io/hostname"},
        ],
        "schedulerTopologyBindings": [{"schedulerName": "kai-scheduler", "topologyReference": "grove-topology"}],
    },
    "status": {"observedGeneration": 1},
}


def test_cluster_topology_binding_round_trips_and_needs_a_level() -> None:
    ctb = ClusterTopologyBinding.model_validate(copy.deepcopy(CTB))
    assert ctb.to_json_dict() == CTB
    assert [level.domain for level in ctb.spec.levels] == ["zone", "rack", "host"]
    empty = copy.deepcopy(CTB)
    empty["spec"]["levels"] = []
    with pytest.raises(ValidationError, match="levels"):
        ClusterTopologyBinding.model_validate(empty)


def test_objects_built_in_code_write_what_the_api_server_needs() -> None:
    from api.grove import GroveMeta, PodGangSpec, PodGangStatus, PodGroup

    gang = PodGang(
        metadata=GroveMeta(name="g", namespace="ns"),
        spec=PodGangSpec(podgroups=[PodGroup(name="c", minReplicas=0)]),
    )
    gang.metadata.labels["grove.io/scheduler-name"] = "grove"  # mutating a default container still counts
    gang.status = PodGangStatus()
    assert gang.to_json_dict() == {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": "g", "namespace": "ns", "labels": {"grove.io/scheduler-name": "grove"}},
        "spec": {"podgroups": [{"name": "c", "podReferences": [], "minReplicas": 0}]},
        "status": {"phase": "Pending"},
    }


def test_member_keys_fall_back_to_the_gangs_namespace_and_keep_reference_order() -> None:
    gang = PodGang.model_validate(
        {
            "metadata": {"name": "g", "namespace": "team"},
            "spec": {
                "podgroups": [
                    {
                        "name": "a",
                        "minReplicas": 1,
                        "podReferences": [{"name": "a-1"}, {"namespace": "x", "name": "a-0"}],
                    },
                    {"name": "b", "minReplicas": 0, "podReferences": [{"name": "b-0"}]},
                ]
            },
        }
    )
    assert gang.member_keys() == ["team/a-1", "x/a-0", "team/b-0"]
