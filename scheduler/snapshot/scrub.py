"""What a recorded snapshot keeps: the fields placement and replay read, and nothing else (deny by default).

A snapshot is shared (attached to issues, committed as a benchmark), so every object is rebuilt from an allowlist
of the fields scheduling needs, at every depth, PodCliqueSet pod templates included. Everything not listed is
dropped: container commands, arguments and environment values (names stay: they show the workload's shape),
``envFrom``, probes and lifecycle hooks (``exec`` commands, ``httpHeaders``), images, volume mounts, security
contexts, volume sources' options and attributes (CSI ``volumeAttributes``, flexVolume ``options``, secret
references: only the source's kind, a PVC's claim name and storage class, a CSI driver's name stay), every
annotation but the few replay and Grove read (so ``last-applied-configuration`` and credential-like keys go, on
objects and on clique and scaling-group templates alike), ``managedFields``, object status beyond phase and
conditions' type/status, a node's addresses, system info and cached images, and whatever fields a newer API adds.
Labels stay: node labels are the topology, and selectors (affinity, spread) match pod labels. Secrets are never
read in the first place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from api.grove import ANNOTATION_TOPOLOGY_NAME
from scheduler.snapshot import DURATION_ANNOTATION

__all__ = ["KEPT_ANNOTATIONS", "scrub"]

Rule = Callable[[Any], Any]

KEPT_ANNOTATIONS = frozenset({DURATION_ANNOTATION, ANNOTATION_TOPOLOGY_NAME})
"""The only annotations a snapshot keeps: a replayed gang's run time, and the topology a Grove object names."""


def _keep(value: Any) -> Any:
    """A value that holds only scheduling facts (a selector, a toleration, a quantity), kept whole."""
    return value


def _fields(**rules: Rule) -> Rule:
    """An object reduced to the named fields, each by its own rule; anything else is dropped."""

    def apply(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return None  # not the object the field should hold: nothing of it is known to be safe
        return {key: rules[key](child) for key, child in value.items() if key in rules}

    return apply


def _each(rule: Rule) -> Rule:
    def apply(value: Any) -> Any:
        return [rule(item) for item in value] if isinstance(value, list) else None

    return apply


def _annotations(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return None
    return {key: text for key, text in value.items() if key in KEPT_ANNOTATIONS}


def _volume(value: Any) -> Any:
    """A volume's name and the kind of its source; of the source itself only what volume scheduling reads."""
    if not isinstance(value, Mapping):
        return None
    kept: dict[str, Any] = {}
    for key, source in value.items():
        if key == "name":
            kept[key] = source
        else:
            kept[key] = _VOLUME_SOURCES.get(key, _fields())(source)
    return kept


_VOLUME_SOURCES: dict[str, Rule] = {
    "persistentVolumeClaim": _fields(claimName=_keep, readOnly=_keep),
    "ephemeral": _fields(
        volumeClaimTemplate=_fields(
            spec=_fields(accessModes=_keep, storageClassName=_keep, resources=_keep, volumeMode=_keep)
        )
    ),
    "csi": _fields(driver=_keep, readOnly=_keep),  # NodeVolumeLimits counts CSI volumes per driver
}

_METADATA = _fields(
    name=_keep,
    namespace=_keep,
    uid=_keep,
    generation=_keep,
    creationTimestamp=_keep,  # a replayed gang's arrival
    deletionTimestamp=_keep,
    labels=_keep,
    annotations=_annotations,
    ownerReferences=_each(
        _fields(apiVersion=_keep, kind=_keep, name=_keep, uid=_keep, controller=_keep, blockOwnerDeletion=_keep)
    ),
)

_CONTAINER = _fields(
    name=_keep,
    resources=_keep,
    restartPolicy=_keep,  # "Always" makes an init container a sidecar, whose requests add up
    ports=_each(_fields(name=_keep, containerPort=_keep, hostPort=_keep, hostIP=_keep, protocol=_keep)),
    env=_each(_fields(name=_keep)),
)

_POD_SPEC = _fields(
    containers=_each(_CONTAINER),
    initContainers=_each(_CONTAINER),
    ephemeralContainers=_each(_fields(name=_keep)),
    overhead=_keep,
    resources=_keep,  # pod-level resources
    resourceClaims=_keep,
    nodeName=_keep,
    nodeSelector=_keep,
    affinity=_keep,
    tolerations=_keep,
    topologySpreadConstraints=_keep,
    schedulingGates=_keep,
    schedulerName=_keep,
    priority=_keep,
    priorityClassName=_keep,
    preemptionPolicy=_keep,
    runtimeClassName=_keep,
    os=_keep,
    hostNetwork=_keep,  # host ports then conflict across pods
    volumes=_each(_volume),
)

_CONDITIONS = _each(_fields(type=_keep, status=_keep))

_TOPOLOGY = _keep  # pack constraints: domain names or label keys only

_KINDS: dict[str, Rule] = {
    "Pod": _fields(
        apiVersion=_keep,
        kind=_keep,
        metadata=_METADATA,
        spec=_POD_SPEC,
        status=_fields(phase=_keep, nominatedNodeName=_keep, conditions=_CONDITIONS),
    ),
    "Node": _fields(
        apiVersion=_keep,
        kind=_keep,
        metadata=_METADATA,
        spec=_fields(unschedulable=_keep, taints=_keep),
        status=_fields(allocatable=_keep, capacity=_keep, conditions=_CONDITIONS),
    ),
    "PodGang": _fields(
        apiVersion=_keep,
        kind=_keep,
        metadata=_METADATA,
        spec=_fields(
            podgroups=_each(
                _fields(
                    name=_keep,
                    podReferences=_each(_fields(namespace=_keep, name=_keep)),
                    minReplicas=_keep,
                    topologyConstraint=_TOPOLOGY,
                )
            ),
            topologyConstraint=_TOPOLOGY,
            topologyConstraintGroupConfigs=_each(
                _fields(name=_keep, podGroupNames=_keep, topologyConstraint=_TOPOLOGY)
            ),
            priorityClassName=_keep,
            reuseReservationRef=_fields(namespace=_keep, name=_keep),
        ),
        status=_fields(phase=_keep, placementScore=_keep, conditions=_CONDITIONS),
    ),
    "PodCliqueSet": _fields(
        apiVersion=_keep,
        kind=_keep,
        metadata=_METADATA,
        spec=_fields(
            replicas=_keep,
            updateStrategy=_fields(type=_keep),
            template=_fields(
                cliques=_each(
                    _fields(
                        name=_keep,
                        labels=_keep,
                        annotations=_annotations,
                        topologyConstraint=_TOPOLOGY,
                        spec=_fields(
                            roleName=_keep,
                            podSpec=_POD_SPEC,
                            replicas=_keep,
                            minAvailable=_keep,
                            startsAfter=_keep,
                            autoScalingConfig=_fields(minReplicas=_keep, maxReplicas=_keep),
                        ),
                    )
                ),
                cliqueStartupType=_keep,
                priorityClassName=_keep,
                topologyConstraint=_TOPOLOGY,
                terminationDelay=_keep,
                headlessServiceConfig=_fields(publishNotReadyAddresses=_keep),
                podCliqueScalingGroups=_each(
                    _fields(
                        name=_keep,
                        cliqueNames=_keep,
                        replicas=_keep,
                        minAvailable=_keep,
                        scaleConfig=_fields(minReplicas=_keep, maxReplicas=_keep),
                        annotations=_annotations,
                        topologyConstraint=_TOPOLOGY,
                    )
                ),
            ),
        ),
    ),
    "PriorityClass": _fields(
        apiVersion=_keep,
        kind=_keep,
        metadata=_METADATA,
        value=_keep,
        globalDefault=_keep,
        preemptionPolicy=_keep,
    ),
    "ClusterTopologyBinding": _fields(
        apiVersion=_keep,
        kind=_keep,
        metadata=_METADATA,
        spec=_fields(levels=_each(_fields(domain=_keep, key=_keep)), schedulerTopologyBindings=_keep),
    ),
}

_ANY_KIND = _fields(apiVersion=_keep, kind=_keep, metadata=_METADATA)


def scrub(item: dict[str, Any]) -> dict[str, Any]:
    """A new object holding only the fields a snapshot keeps for ``item``'s kind (``item`` is not modified)."""
    rule = _KINDS.get(str(item.get("kind")), _ANY_KIND)
    cleaned: dict[str, Any] = rule(item)
    return cleaned
