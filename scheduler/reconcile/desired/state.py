"""The pure desired-state function: a (defaulted, valid) PodCliqueSet → the gangs and cliques it should have.

No I/O and no pods yet: this fixes *which* PodCliqueScalingGroups, PodCliques and PodGangs exist, which PodCliques
(by FQN) each gang contains, in which order, with which ``minReplicas``, pod counts, startup dependencies and
translated topology constraints (reference §2, §5). The builders beside it turn it into API objects.

The template is the source of truth for everything but two counts, as in Grove: a PodCliqueScalingGroup's and a
PodClique's ``spec.replicas`` are the template's only until the object exists; after that ``kubectl scale`` or an
HPA owns them, and ``LiveScale`` carries what the live objects say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from api.grove import (
    ClusterTopologyBinding,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueTemplate,
    PodGangTopologyConstraint,
)
from scheduler.reconcile.desired.names import base_gang_name, clique_fqn, pcsg_fqn, scaled_gang_name
from scheduler.reconcile.rules.topology import translate

__all__ = [
    "CliquePlan",
    "Desired",
    "GangPlan",
    "GroupConfigPlan",
    "GroupPlan",
    "GroupSlot",
    "LiveScale",
    "desired_state",
]


@dataclass(frozen=True)
class LiveScale:
    """``spec.replicas`` of the live PodCliqueScalingGroups and PodCliques (by FQN), already within limits."""

    groups: Mapping[str, int] = field(default_factory=dict)
    cliques: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupSlot:
    """A PodClique's place in a PodCliqueScalingGroup: which group, which replica of it."""

    config: PodCliqueScalingGroupConfig
    fqn: str  # <pcs>-<r>-<pcsg>
    replica: int
    template_pods: int  # pods in one replica of the group (GROVE_PCSG_TEMPLATE_NUM_PODS)


@dataclass(frozen=True)
class CliquePlan:
    """One PodClique: its FQN, template, gang, pod count and the parents it starts after."""

    fqn: str
    template: PodCliqueTemplate
    pcs_replica: int
    gang: str
    base_gang: str | None  # set only for cliques of a scaled gang, as Grove's grove.io/base-podgang label
    replicas: int
    min_available: int
    group: GroupSlot | None
    constraint: PodGangTopologyConstraint | None  # the clique's own, translated: its PodGroup's constraint
    parents: tuple[tuple[str, int], ...] = ()  # (parent PodClique FQN, its minAvailable): startup order


@dataclass(frozen=True)
class GroupPlan:
    """One PodCliqueScalingGroup object ``<pcs>-<r>-<pcsg>`` and how many replicas it has now."""

    fqn: str
    config: PodCliqueScalingGroupConfig
    pcs_replica: int
    replicas: int


@dataclass(frozen=True)
class GroupConfigPlan:
    name: str
    pod_group_names: tuple[str, ...]
    constraint: PodGangTopologyConstraint | None


@dataclass(frozen=True)
class GangPlan:
    name: str
    pcs_replica: int
    cliques: tuple[CliquePlan, ...]  # PodGroup order
    constraint: PodGangTopologyConstraint | None
    group_configs: tuple[GroupConfigPlan, ...]

    @property
    def is_base(self) -> bool:
        return all(clique.base_gang is None for clique in self.cliques)


@dataclass(frozen=True)
class Desired:
    gangs: tuple[GangPlan, ...]
    topology_translated: bool  # at least one constraint reached a PodGang (Grove then sets grove.io/topology-name)
    groups: tuple[GroupPlan, ...] = ()

    def cliques(self) -> dict[str, CliquePlan]:
        return {clique.fqn: clique for gang in self.gangs for clique in gang.cliques}

    def gang(self, name: str) -> GangPlan | None:
        return next((gang for gang in self.gangs if gang.name == name), None)


def desired_state(pcs: PodCliqueSet, binding: ClusterTopologyBinding | None, scale: LiveScale | None = None) -> Desired:
    """Every PodGang of every PCS replica: base ``<pcs>-<r>`` first, then its scaled gangs in group order."""
    scale = scale or LiveScale()
    template = pcs.spec.template
    by_name = {clique.name: clique for clique in template.cliques}
    grouped = {name for group in template.podCliqueScalingGroups for name in group.cliqueNames}
    pcs_constraint = translate(template.topologyConstraint, binding)
    order = _StartupOrder(pcs)
    gangs: list[GangPlan] = []
    groups: list[GroupPlan] = []
    for replica in range(max(pcs.spec.replicas, 0)):
        base = base_gang_name(pcs.metadata.name, replica)
        base_cliques: list[CliquePlan] = [
            _clique(
                fqn=clique_fqn(pcs.metadata.name, replica, clique.name),
                template=clique,
                binding=binding,
                replica=replica,
                gang=base,
                base_gang=None,
                group=None,
                scale=scale,
                parents=order.parents(clique.name, replica=replica, group=None),
            )
            for clique in template.cliques
            if clique.name not in grouped
        ]
        configs: list[GroupConfigPlan] = []
        scaled: list[GangPlan] = []
        for group in template.podCliqueScalingGroups:
            members = [by_name[name] for name in group.cliqueNames if name in by_name]
            group_name = pcsg_fqn(pcs.metadata.name, replica, group.name)
            minimum = group.minAvailable or 1
            # Never fewer than the base gang holds: Grove's base PodGang always lists replicas [0, minAvailable).
            count = max(scale.groups.get(group_name, group.replicas or 1), minimum)
            groups.append(GroupPlan(fqn=group_name, config=group, pcs_replica=replica, replicas=count))
            template_pods = sum(member.spec.replicas for member in members)
            group_constraint = translate(group.topologyConstraint, binding)
            for index in range(count):
                slot = GroupSlot(config=group, fqn=group_name, replica=index, template_pods=template_pods)
                in_base = index < minimum
                gang = base if in_base else scaled_gang_name(pcs.metadata.name, replica, group.name, index, minimum)
                cliques = [
                    _clique(
                        fqn=f"{group_name}-{index}-{member.name}",
                        template=member,
                        binding=binding,
                        replica=replica,
                        gang=gang,
                        base_gang=None if in_base else base,
                        group=slot,
                        scale=scale,
                        parents=order.parents(member.name, replica=replica, group=slot),
                    )
                    for member in members
                ]
                if in_base:
                    base_cliques += cliques
                    if group_constraint is not None:
                        pod_groups = tuple(clique.fqn for clique in cliques)
                        configs.append(
                            GroupConfigPlan(
                                name=f"{group_name}-{index}", pod_group_names=pod_groups, constraint=group_constraint
                            )
                        )
                else:
                    # Grove's scaled gang falls back to the PCS constraint when its group has none (≠GREP-244).
                    scaled.append(
                        GangPlan(
                            name=gang,
                            pcs_replica=replica,
                            cliques=tuple(cliques),
                            constraint=group_constraint or pcs_constraint,
                            group_configs=(),
                        )
                    )
        gangs.append(
            GangPlan(
                name=base,
                pcs_replica=replica,
                cliques=tuple(base_cliques),
                constraint=pcs_constraint,
                group_configs=tuple(configs),
            )
        )
        gangs += scaled
    translated = any(
        gang.constraint or gang.group_configs or any(clique.constraint for clique in gang.cliques) for gang in gangs
    )
    return Desired(gangs=tuple(gangs), topology_translated=translated, groups=tuple(groups))


class _StartupOrder:
    """Grove's startup dependencies (``identifyFullyQualifiedStartupDependencyNames``, reference §2): which parent
    PodCliques a clique's pods wait for. InOrder: the clique before it in the template; Explicit: its
    ``startsAfter``. A parent inside a scaling group means that group's base-gang replicas; a clique of a scaled
    gang (group replica ≥ minAvailable) waits only for parents in its own group replica."""

    def __init__(self, pcs: PodCliqueSet) -> None:
        template = pcs.spec.template
        self._pcs = pcs.metadata.name
        self._type = template.cliqueStartupType
        self._names = [clique.name for clique in template.cliques]
        self._templates = {clique.name: clique for clique in template.cliques}
        self._group_of = {name: group for group in template.podCliqueScalingGroups for name in group.cliqueNames}

    def parents(self, name: str, *, replica: int, group: GroupSlot | None) -> tuple[tuple[str, int], ...]:
        if self._type == "CliqueStartupTypeInOrder":
            index = self._names.index(name)
            wanted = [self._names[index - 1]] if index > 0 else []
        elif self._type == "CliqueStartupTypeExplicit":
            wanted = list(self._templates[name].spec.startsAfter)
        else:
            return ()
        found: list[tuple[str, int]] = []
        for parent in wanted:
            spec = self._templates[parent].spec
            minimum = spec.minAvailable if spec.minAvailable is not None else spec.replicas
            if group is not None and group.replica >= (group.config.minAvailable or 1):
                if parent in group.config.cliqueNames:
                    found.append((f"{group.fqn}-{group.replica}-{parent}", minimum))
            else:
                found += [(fqn, minimum) for fqn in self._base_gang_fqns(parent, replica)]
        return tuple(found)

    def _base_gang_fqns(self, parent: str, replica: int) -> list[str]:
        config = self._group_of.get(parent)
        if config is None:
            return [clique_fqn(self._pcs, replica, parent)]
        group = pcsg_fqn(self._pcs, replica, config.name)
        return [f"{group}-{index}-{parent}" for index in range(config.minAvailable or 1)]


def _clique(
    *,
    fqn: str,
    template: PodCliqueTemplate,
    binding: ClusterTopologyBinding | None,
    replica: int,
    gang: str,
    base_gang: str | None,
    group: GroupSlot | None,
    scale: LiveScale,
    parents: tuple[tuple[str, int], ...],
) -> CliquePlan:
    replicas = scale.cliques.get(fqn, template.spec.replicas)
    minimum = template.spec.minAvailable if template.spec.minAvailable is not None else template.spec.replicas
    return CliquePlan(
        fqn=fqn,
        template=template,
        pcs_replica=replica,
        gang=gang,
        base_gang=base_gang,
        replicas=replicas,
        min_available=minimum,
        group=group,
        constraint=translate(template.topologyConstraint, binding),
        parents=parents,
    )
