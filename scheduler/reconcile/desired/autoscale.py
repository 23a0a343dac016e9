"""HorizontalPodAutoscalers for ``autoScalingConfig`` (a clique) and ``scaleConfig`` (a scaling group).

As Grove's PodCliqueSet controller (``components/hpa/hpa.go``): one ``autoscaling/v2`` HPA per PodCliqueSet replica
and configured clique or group, named after its target and scaling it through the target's ``scale`` subresource
(the CRDs map it to ``spec.replicas``, ``status.replicas`` and the pod selector). Only standalone cliques have one:
validation refuses an ``autoScalingConfig`` on a clique inside a scaling group (scale the group instead).
"""

from __future__ import annotations

from api.grove import GROVE_API_VERSION, AutoScalingConfig, PodCliqueSet
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.cliques import controller_reference, pcs_owner
from scheduler.reconcile.desired.names import COMPONENT_HPA, LABEL_COMPONENT, LABEL_NAME, grove_labels
from scheduler.reconcile.desired.state import Desired

__all__ = ["hpa_objects"]


def _hpa(pcs: PodCliqueSet, *, kind: str, target: str, config: AutoScalingConfig) -> KubeObject:
    fields = config.to_json_dict()  # metrics, and fields Grove does not have but an HPA takes (behavior), as given
    spec: KubeObject = {"scaleTargetRef": {"apiVersion": GROVE_API_VERSION, "kind": kind, "name": target}, **fields}
    if not spec.get("metrics"):  # none: the HPA's own default (80% average CPU), as in Grove
        spec.pop("metrics", None)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": target,
            "namespace": pcs.metadata.namespace,
            "labels": grove_labels(pcs.metadata.name, **{LABEL_NAME: target, LABEL_COMPONENT: COMPONENT_HPA}),
            "ownerReferences": [controller_reference(pcs_owner(pcs))],
        },
        "spec": spec,
    }


def hpa_objects(pcs: PodCliqueSet, desired: Desired) -> list[KubeObject]:
    hpas = [
        _hpa(pcs, kind="PodClique", target=clique.fqn, config=clique.template.spec.autoScalingConfig)
        for gang in desired.gangs
        for clique in gang.cliques
        if clique.group is None and clique.template.spec.autoScalingConfig is not None
    ]
    hpas += [
        _hpa(pcs, kind="PodCliqueScalingGroup", target=group.fqn, config=group.config.scaleConfig)
        for group in desired.groups
        if group.config.scaleConfig is not None
    ]
    return hpas
