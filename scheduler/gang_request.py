"""From a PodGang and its pods to the solver's ``GangRequest``.

Pods of one PodGroup come from one PodClique template, so the solver treats them as interchangeable and asks
for one demand per group. That assumption is checked here, not trusted: a group whose pods differ in demand,
or that references a pod that does not exist, is refused with the pod named — planning it anyway could place a
pod on a node too small for it, which is the partial gang this project exists to prevent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from api.grove import LABEL_PODGANG, PodGang, PodGangTopologyConstraint
from api.kube import Node, Pod
from placement.request import GangRequest, GroupRequest, PackScope
from scheduler.eligibility import eligible_nodes

__all__ = ["GangRequestError", "gang_request", "request_for_pod", "single_pod_request"]


class GangRequestError(ValueError):
    """A gang that cannot be planned as it stands; the message names the gang, the group and the pod."""


def _pack(groups: Sequence[str], constraint: PodGangTopologyConstraint | None) -> PackScope | None:
    pack = constraint.packConstraint if constraint else None
    if pack is None or not (pack.required or pack.preferred):
        return None
    return PackScope(groups=tuple(groups), required=pack.required or None, preferred=pack.preferred or None)


def _placement_signature(pod: Pod) -> str:
    spec = pod.spec
    return spec.model_dump_json(include={"nodeSelector", "affinity", "tolerations"})


def _eligible(pods: Sequence[Pod], nodes: Sequence[Node]) -> frozenset[str] | None:
    """Nodes every pod of the group may use; checked once per distinct set of placement rules, not per pod."""
    result: frozenset[str] | None = None
    seen: set[str] = set()
    for pod in pods:
        signature = _placement_signature(pod)
        if signature in seen:
            continue
        seen.add(signature)
        passing = eligible_nodes(pod, nodes)
        if passing is not None:
            result = passing if result is None else result & passing
    return result


def _priority(pods: Iterable[Pod]) -> int:
    # Grove does not copy the PodCliqueSet's priority class into pods, so pods may carry none: 0, like the API.
    return max((pod.spec.priority for pod in pods if pod.spec.priority is not None), default=0)


def gang_request(gang: PodGang, pods: Mapping[str, Pod], nodes: Sequence[Node]) -> GangRequest:
    """The request for ``gang``; ``pods`` maps pod keys (``ns/name``) to pods and must hold every member."""
    where = f"PodGang {gang.key}"
    groups: list[GroupRequest] = []
    packs: list[PackScope] = []
    members: list[Pod] = []
    for index, podgroup in enumerate(gang.spec.podgroups):
        at = f"{where}: spec.podgroups[{index}] ({podgroup.name})"
        group_pods: list[Pod] = []
        for reference in podgroup.podReferences:
            key = reference.key_in(gang.metadata.namespace)
            pod = pods.get(key)
            if pod is None:
                raise GangRequestError(f"{at}: pod {key} is referenced but does not exist")
            group_pods.append(pod)
        if podgroup.minReplicas > len(group_pods):
            raise GangRequestError(
                f"{at}: minReplicas is {podgroup.minReplicas} but only {len(group_pods)} pods are referenced"
            )
        demand = group_pods[0].requests() if group_pods else {}
        for pod in group_pods[1:]:
            other = pod.requests()
            if other != demand:
                raise GangRequestError(
                    f"{at}: pod {pod.key} requests {other}, unlike {group_pods[0].key} ({demand}); "
                    "pods of one group must be alike"
                )
        groups.append(
            GroupRequest(
                name=podgroup.name,
                pods=tuple(pod.key for pod in group_pods),
                demand=demand,
                min_replicas=podgroup.minReplicas,
                eligible=_eligible(group_pods, nodes),
            )
        )
        members.extend(group_pods)
        own = _pack([podgroup.name], podgroup.topologyConstraint)
        if own is not None:
            packs.append(own)
    names = [group.name for group in groups]
    if len(set(names)) != len(names):
        raise GangRequestError(f"{where}: spec.podgroups names must be unique, got {names}")
    whole = _pack(names, gang.spec.topologyConstraint)
    for index, config in enumerate(gang.spec.topologyConstraintGroupConfigs):
        unknown = [name for name in config.podGroupNames if name not in names]
        if unknown:
            raise GangRequestError(
                f"{where}: spec.topologyConstraintGroupConfigs[{index}] ({config.name}) names unknown podgroups "
                f"{unknown}"
            )
        scope = _pack(config.podGroupNames, config.topologyConstraint)
        if scope is not None:
            packs.append(scope)
    # Broadest scope first: the gang, then group configs, then single groups — the order readers expect.
    ordered = ([whole] if whole is not None else []) + [p for p in packs if len(p.groups) > 1]
    ordered += [p for p in packs if len(p.groups) == 1]
    return GangRequest(
        namespace=gang.metadata.namespace,
        name=gang.metadata.name,
        groups=tuple(groups),
        packs=tuple(ordered),
        priority=_priority(members),
    )


def single_pod_request(pod: Pod, nodes: Sequence[Node]) -> GangRequest:
    """A pod of no PodGang is a gang of one: one group of one pod, guaranteed."""
    group = GroupRequest(
        name=pod.metadata.name,
        pods=(pod.key,),
        demand=pod.requests(),
        min_replicas=1,
        eligible=eligible_nodes(pod, nodes),
    )
    return GangRequest(
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        groups=(group,),
        priority=pod.spec.priority or 0,
    )


def request_for_pod(
    pod: Pod, *, podgangs: Mapping[str, PodGang], pods: Mapping[str, Pod], nodes: Sequence[Node]
) -> GangRequest:
    """The request ``pod`` is planned in: its PodGang's (``podgangs`` keyed ``ns/name``), or a gang of one."""
    gang_name = pod.metadata.labels.get(LABEL_PODGANG)
    if not gang_name:
        return single_pod_request(pod, nodes)
    gang = podgangs.get(f"{pod.metadata.namespace}/{gang_name}")
    if gang is None:
        raise GangRequestError(
            f"pod {pod.key}: label {LABEL_PODGANG}={gang_name} names PodGang "
            f"{pod.metadata.namespace}/{gang_name}, which does not exist (yet)"
        )
    return gang_request(gang, pods, nodes)
