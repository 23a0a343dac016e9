"""From a PodGang and its pods to the solver's ``GangRequest``: the one translator ``serve`` (the coordinator's
planning step), ``plan``, ``snapshot inspect`` and the benchmarks use.

The request asks for what is still to place. Members already bound (``spec.nodeName``, not finished) and members
the caller has *placed* (kube-scheduler assumed them on a node: waiting at the barrier, ready to bind, or kept on
the node an earlier plan gave them) are facts: they are left out, count towards their group's ``minReplicas``, and
hold every ``required`` pack scope they are in to their domain. Finished pods are not planned, nor gated ones, but
for pods held by Grove's own gate alone: Grove lifts that gate once the PodGang exists, which it does by the time
a PodGang is translated, and lifts it pod by pod. Planned before, the first pod kube-scheduler pops has its node
while its mates are still being ungated (its bind waits for them), rather than a refusal and a back-off each.
Groups with nothing left to plan are dropped, with the pack scopes that covered only them.

One documented way for what Grove's templates make rare:
- **Pods of one group that ask for different amounts** are planned at the per-resource peak of the pods still to
  place: every pod fits where the plan puts it (a smaller one leaves a little unused), and the gang is not held
  up forever by a hand-edited pod.
- **Priority** is the PodGang's ``spec.priorityClassName`` resolved through the cluster's PriorityClasses (Grove
  does not copy the class into pods), else the highest ``spec.priority`` among the gang's pods, else the default
  class's: the rule of ``translation.priority``, handed the classes by the caller.
- **A group config naming a group the gang does not have** is refused, naming the config and the group: a pack
  the user wrote is never silently narrowed.
- **A referenced pod that does not exist (yet)** is left out; the gang is not plannable yet
  (:class:`GangNotReady`) only when that, or guaranteed pods still gated, leave a group short of ``minReplicas``
  (Grove creates pods and fills ``podReferences`` as they appear; a missing extra must not hold the gang).
- **MNNVL.** Pods that claim from one ComputeDomain (Grove's ``mnnvl-claim``, made from the domain's
  ResourceClaimTemplate ``<pcs>-<r>-<group>``) need one multi-node NVLink domain: their groups get a ``required``
  pack on the NVLink label the nodes carry (GPU Feature Discovery's ``nvidia.com/gpu.clique``, or Topograph's
  accelerator domain), beside the PodGang's own constraints. No node with such a label: no pack (the extender cannot
  see NVLink domains; the DRA driver's allocation decides). A domain's pods in other gangs (a scaled gang of the
  same replica) are not held to it here: once the domain runs, kube-scheduler's DRA filter refuses other nodes for
  their claim, and the extender re-plans around the refusal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from api.core import Node, Pod
from api.grove import GANG_GATE, LABEL_PODGANG, MNNVL_CLAIM, PodGang, PodGangTopologyConstraint
from placement.request import GangRequest, GroupRequest, PackScope
from scheduler.extender.translation.eligibility import eligible_nodes
from scheduler.extender.translation.priority import NO_CLASSES, PriorityClasses, gang_priority
from topology import DEFAULT_LEVELS

# The label keys of one multi-node NVLink domain, in the order the default topology levels prefer them.
_NVLINK_KEYS = next(level.keys for level in DEFAULT_LEVELS if level.name == "nvlink")

__all__ = [
    "Eligibility",
    "GangNotReady",
    "GangRequestError",
    "gang_request",
    "placement_signature",
    "request_for_pod",
    "single_pod_request",
]

Eligibility = Callable[[Pod, str], frozenset[str] | None]
"""The nodes a pod may run on (``None``: every node), given the pod and its ``placement_signature``: what a caller
that keeps answers per signature passes to the translator; by default every node is judged each time."""


class GangRequestError(ValueError):
    """A gang that cannot be planned as it stands; the message names the gang, the field and the pod."""


class GangNotReady(GangRequestError):
    """A gang that is not plannable yet: a referenced pod does not exist, or guaranteed pods are still gated."""


def _pack(groups: Sequence[str], constraint: PodGangTopologyConstraint | None) -> PackScope | None:
    pack = constraint.packConstraint if constraint else None
    if pack is None or not (pack.required or pack.preferred):
        return None
    return PackScope(groups=tuple(groups), required=pack.required or None, preferred=pack.preferred or None)


def placement_signature(pod: Pod) -> str:
    """Everything of the pod that ``eligibility`` judges a node by: pods with equal signatures may run on the same
    nodes."""
    spec = pod.spec
    return spec.model_dump_json(include={"nodeSelector", "affinity", "tolerations"})


def _every_node(nodes: Sequence[Node]) -> Eligibility:
    return lambda pod, _: eligible_nodes(pod, nodes)


def _eligible(pods: Sequence[Pod], eligible: Eligibility) -> frozenset[str] | None:
    """Nodes every pod of the group may use; checked once per distinct set of placement rules, not per pod."""
    result: frozenset[str] | None = None
    seen: set[str] = set()
    for pod in pods:
        signature = placement_signature(pod)
        if signature in seen:
            continue
        seen.add(signature)
        passing = eligible(pod, signature)
        if passing is not None:
            result = passing if result is None else result & passing
    return result


def _peak(vectors: Iterable[Mapping[str, int]]) -> dict[str, int]:
    peak: dict[str, int] = {}
    for vector in vectors:
        for resource, units in vector.items():
            peak[resource] = max(peak.get(resource, 0), units)
    return peak


def gang_request(
    gang: PodGang,
    pods: Mapping[str, Pod],
    nodes: Sequence[Node],
    *,
    placed: Mapping[str, str] | None = None,
    excluded: Mapping[str, frozenset[str]] | None = None,
    only: str | None = None,
    gated: bool = False,
    requests: Callable[[Pod], Mapping[str, int]] = Pod.requests,
    eligible: Eligibility | None = None,
    classes: PriorityClasses = NO_CLASSES,
) -> GangRequest:
    """The request for what is left of ``gang``. ``pods`` maps pod keys (``ns/name``) to the members that exist;
    ``placed`` maps members assumed on a node (not bound yet) to it; ``excluded`` maps a group to nodes
    kube-scheduler's own filters refused for it; with ``only``, just that pod is planned, as one required pod
    (a best-effort extra of a gang that already stands); ``gated``: count gated pods as waiting too (what the
    gang will ask for, as a summary shows it, rather than what can be placed now); ``requests``: a pod's summed
    requests (the extender passes its store's cached ones); ``eligible``: the nodes a pod may run on, judged on
    ``nodes`` (the extender passes answers it keeps while the nodes do not change); ``classes``: the cluster's
    PriorityClasses, which the PodGang's ``priorityClassName`` names."""
    where = f"PodGang {gang.key}"
    names = [group.name for group in gang.spec.podgroups]
    if len(set(names)) != len(names):
        raise GangRequestError(f"{where}: spec.podgroups names must be unique, got {names}")
    scopes = _scopes(gang, names)
    members: list[_Members] = []
    for index, podgroup in enumerate(gang.spec.podgroups):
        at = f"{where}: spec.podgroups[{index}] ({podgroup.name})"
        keys = [reference.key_in(gang.metadata.namespace) for reference in podgroup.podReferences]
        if podgroup.minReplicas > len(keys):
            raise GangRequestError(
                f"{at}: minReplicas is {podgroup.minReplicas} but only {len(keys)} pods are referenced"
            )
        present = tuple(pod for key in keys if (pod := pods.get(key)) is not None)
        missing = tuple(key for key in keys if key not in pods)
        members.append(_Members(at, podgroup.name, podgroup.minReplicas, present, missing))
    scopes += _mnnvl_scopes(members, nodes)
    return _translate(
        namespace=gang.metadata.namespace,
        name=gang.metadata.name,
        members=members,
        scopes=scopes,
        nodes=nodes,
        known=_Known(placed or {}, excluded or {}, only, gated, requests, eligible or _every_node(nodes)),
        priority=gang_priority(gang, (pod for group in members for pod in group.pods), classes).value,
    )


@dataclass(frozen=True)
class _Members:
    """A group as the translator sees it: the referenced pods that exist, in reference order, and those that do
    not (yet)."""

    where: str  # how errors name the group
    name: str
    min_replicas: int
    pods: tuple[Pod, ...]
    missing: tuple[str, ...]


@dataclass(frozen=True)
class _Known:
    """What the caller knows beyond the pods: see :func:`gang_request`'s arguments."""

    placed: Mapping[str, str]
    excluded: Mapping[str, frozenset[str]]
    only: str | None
    gated: bool
    requests: Callable[[Pod], Mapping[str, int]]
    eligible: Eligibility


def _translate(
    *,
    namespace: str,
    name: str,
    members: Sequence[_Members],
    scopes: Sequence[PackScope],
    nodes: Sequence[Node],
    known: _Known,
    priority: int,
) -> GangRequest:
    node_of = {pod.key: node for group in members for pod in group.pods if (node := _placed_on(pod, known.placed))}
    groups: list[GroupRequest] = []
    for group in members:
        held = sum(1 for pod in group.pods if pod.key in node_of)
        plannable = (pod for pod in group.pods if known.gated or not pod.gated or pod.gated_only_by(GANG_GATE))
        pending = [pod for pod in plannable if pod.key not in node_of and not pod.terminal]
        if known.only is not None:
            pending = [pod for pod in pending if pod.key == known.only]
            if not pending:
                continue  # just one pod is planned, and it is not in this group
        needed = 1 if known.only is not None else max(0, group.min_replicas - held)
        if needed > len(pending):
            gated = sum(1 for pod in group.pods if pod.gated and not pod.gated_only_by(GANG_GATE))
            missing = f"; not created: {', '.join(group.missing[:3])}" if group.missing else ""
            raise GangNotReady(
                f"{group.where} has {held + len(pending)} of {group.min_replicas} guaranteed pods bound or ready to "
                f"schedule ({len(group.missing)} not created yet, {gated} still gated{missing}); waiting for the rest"
            )
        if not pending:
            continue
        eligible = _eligible(pending, known.eligible)
        if group.name in known.excluded:
            eligible = (frozenset(n.name for n in nodes) if eligible is None else eligible) - known.excluded[group.name]
        groups.append(
            GroupRequest(
                name=group.name,
                pods=tuple(pod.key for pod in pending),
                demand=_peak(known.requests(pod) for pod in pending),
                min_replicas=needed,
                eligible=eligible,
            )
        )
    planned = {group.name for group in groups}
    groups = _hold_to_placed_domains(
        groups, scopes=scopes, members={g.name: g.pods for g in members}, node_of=node_of, nodes=nodes
    )
    packs = tuple(
        PackScope(tuple(g for g in scope.groups if g in planned), scope.required, scope.preferred)
        for scope in scopes
        if any(g in planned for g in scope.groups)
    )
    return GangRequest(
        namespace=namespace,
        name=name,
        groups=tuple(groups),
        packs=packs,
        priority=priority,
    )


def _placed_on(pod: Pod, placed: Mapping[str, str]) -> str | None:
    """The node a member already holds: the caller's (assumed on it) or its own (bound, not finished)."""
    if pod.key in placed:
        return placed[pod.key]
    return pod.spec.nodeName if pod.spec.nodeName and not pod.terminal else None


def _scopes(gang: PodGang, names: Sequence[str]) -> list[PackScope]:
    """Every pack scope of the PodGang, broadest first (the gang, group configs, single groups)."""
    where = f"PodGang {gang.key}"
    whole = _pack(names, gang.spec.topologyConstraint)
    configs: list[PackScope] = []
    for index, config in enumerate(gang.spec.topologyConstraintGroupConfigs):
        unknown = [name for name in config.podGroupNames if name not in names]
        if unknown:
            raise GangRequestError(
                f"{where}: spec.topologyConstraintGroupConfigs[{index}] ({config.name}) names unknown podgroups "
                f"{unknown}"
            )
        if (scope := _pack(config.podGroupNames, config.topologyConstraint)) is not None:
            configs.append(scope)
    singles = [s for g in gang.spec.podgroups if (s := _pack([g.name], g.topologyConstraint)) is not None]
    ordered = ([whole] if whole is not None else []) + [s for s in configs if len(s.groups) > 1]
    return ordered + [s for s in configs if len(s.groups) == 1] + singles


def _mnnvl_scopes(members: Sequence[_Members], nodes: Sequence[Node]) -> list[PackScope]:
    """One required NVLink-domain pack per ComputeDomain the gang's pods claim from (the module docstring)."""
    domains: dict[str, list[str]] = {}
    for group in members:
        for template in {
            claim.resourceClaimTemplateName
            for pod in group.pods
            for claim in pod.spec.resourceClaims
            if claim.name == MNNVL_CLAIM and claim.resourceClaimTemplateName
        }:
            domains.setdefault(template, []).append(group.name)
    if not domains:
        return []
    key = next((k for k in _NVLINK_KEYS if any(k in node.metadata.labels for node in nodes)), None)
    if key is None:
        return []
    return [PackScope(groups=tuple(groups), required=key) for _, groups in sorted(domains.items())]


def _hold_to_placed_domains(
    groups: list[GroupRequest],
    *,
    scopes: Sequence[PackScope],
    members: Mapping[str, Sequence[Pod]],
    node_of: Mapping[str, str],
    nodes: Sequence[Node],
) -> list[GroupRequest]:
    """A ``required`` scope with members already placed must stay in their domain: narrow eligibility to it."""
    if not node_of or not any(scope.required for scope in scopes):
        return groups  # nothing holds any group to a domain: no need to read every node's labels
    labels = {node.name: node.metadata.labels for node in nodes}
    allowed: dict[str, frozenset[str]] = {}
    for scope in scopes:
        if scope.required is None:
            continue
        key = scope.required
        held = [node_of[pod.key] for g in scope.groups for pod in members[g] if pod.key in node_of]
        values = {labels.get(node, {}).get(key) for node in held}
        if len(values) != 1 or None in values:
            continue
        value = values.pop()
        domain = frozenset(name for name, node_labels in labels.items() if node_labels.get(key) == value)
        for name in scope.groups:
            allowed[name] = allowed.get(name, domain) & domain
    everywhere = frozenset(labels)
    return [
        GroupRequest(g.name, g.pods, g.demand, g.min_replicas, (g.eligible or everywhere) & allowed[g.name])
        if g.name in allowed
        else g
        for g in groups
    ]


def single_pod_request(
    pod: Pod,
    nodes: Sequence[Node],
    *,
    group: str | None = None,
    placed: Mapping[str, str] | None = None,
    excluded: Mapping[str, frozenset[str]] | None = None,
    requests: Callable[[Pod], Mapping[str, int]] = Pod.requests,
    eligible: Eligibility | None = None,
    classes: PriorityClasses = NO_CLASSES,
) -> GangRequest:
    """A pod of no PodGang is a gang of one: one group of one pod, guaranteed, named ``group`` (else the pod's
    name). The other arguments are :func:`gang_request`'s; a pod bound or placed leaves nothing to plan."""
    members = [_Members(f"pod {pod.key}", group or pod.metadata.name, 1, (pod,), ())]
    return _translate(
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        members=members,
        scopes=(),
        nodes=nodes,
        known=_Known(placed or {}, excluded or {}, None, False, requests, eligible or _every_node(nodes)),
        priority=gang_priority(None, (pod,), classes).value,
    )


def request_for_pod(
    pod: Pod,
    *,
    podgangs: Mapping[str, PodGang],
    pods: Mapping[str, Pod],
    nodes: Sequence[Node],
    classes: PriorityClasses = NO_CLASSES,
) -> GangRequest:
    """The request ``pod`` is planned in: its PodGang's (``podgangs`` keyed ``ns/name``), or a gang of one."""
    gang_name = pod.metadata.labels.get(LABEL_PODGANG)
    if not gang_name:
        return single_pod_request(pod, nodes, classes=classes)
    gang = podgangs.get(f"{pod.metadata.namespace}/{gang_name}")
    if gang is None:
        raise GangRequestError(
            f"pod {pod.key}: label {LABEL_PODGANG}={gang_name} names PodGang "
            f"{pod.metadata.namespace}/{gang_name}, which does not exist (yet)"
        )
    return gang_request(gang, pods, nodes, classes=classes)
