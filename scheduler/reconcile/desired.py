"""The pure desired-state function: a (defaulted, valid) PodCliqueSet → the gangs and cliques it should have.

No I/O and no pods yet: this fixes *which* PodGangs exist, which PodCliques (by FQN) each contains, in which order,
with which ``minReplicas``, pod counts and translated topology constraints (reference §2, §5). ``pods`` and
``gangs`` turn it into API objects once the existing pods are known.
"""

from __future__ import annotations

from dataclasses import dataclass

from api.grove import (
    ClusterTopologyBinding,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueTemplate,
    PodGangTopologyConstraint,
)
from scheduler.reconcile.names import base_gang_name, clique_fqn, pcsg_fqn, scaled_gang_name
from scheduler.reconcile.topology_rules import translate

__all__ = ["CliquePlan", "Desired", "GangPlan", "GroupConfigPlan", "GroupSlot", "desired_state"]


@dataclass(frozen=True)
class GroupSlot:
    """A PodClique's place in a PodCliqueScalingGroup: which group, which replica of it."""

    config: PodCliqueScalingGroupConfig
    fqn: str  # <pcs>-<r>-<pcsg>
    replica: int
    template_pods: int  # pods in one replica of the group (GROVE_PCSG_TEMPLATE_NUM_PODS)


@dataclass(frozen=True)
class CliquePlan:
    """One PodClique (never created as an object): its FQN, template, gang and pod count."""

    fqn: str
    template: PodCliqueTemplate
    pcs_replica: int
    gang: str
    base_gang: str | None  # set only for cliques of a scaled gang, as Grove's grove.io/base-podgang label
    replicas: int
    min_available: int
    group: GroupSlot | None
    constraint: PodGangTopologyConstraint | None  # the clique's own, translated: its PodGroup's constraint


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

    def cliques(self) -> dict[str, CliquePlan]:
        return {clique.fqn: clique for gang in self.gangs for clique in gang.cliques}

    def gang(self, name: str) -> GangPlan | None:
        return next((gang for gang in self.gangs if gang.name == name), None)


def desired_state(pcs: PodCliqueSet, binding: ClusterTopologyBinding | None) -> Desired:
    """Every PodGang of every PCS replica: base ``<pcs>-<r>`` first, then its scaled gangs in group order."""
    template = pcs.spec.template
    by_name = {clique.name: clique for clique in template.cliques}
    grouped = {name for group in template.podCliqueScalingGroups for name in group.cliqueNames}
    pcs_constraint = translate(template.topologyConstraint, binding)
    gangs: list[GangPlan] = []
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
            )
            for clique in template.cliques
            if clique.name not in grouped
        ]
        configs: list[GroupConfigPlan] = []
        scaled: list[GangPlan] = []
        for group in template.podCliqueScalingGroups:
            members = [by_name[name] for name in group.cliqueNames if name in by_name]
            group_name = pcsg_fqn(pcs.metadata.name, replica, group.name)
            minimum, count = group.minAvailable or 1, group.replicas or 1
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
    return Desired(gangs=tuple(gangs), topology_translated=translated)


def _clique(
    *,
    fqn: str,
    template: PodCliqueTemplate,
    binding: ClusterTopologyBinding | None,
    replica: int,
    gang: str,
    base_gang: str | None,
    group: GroupSlot | None,
) -> CliquePlan:
    replicas = template.spec.replicas
    minimum = template.spec.minAvailable if template.spec.minAvailable is not None else replicas
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
    )
