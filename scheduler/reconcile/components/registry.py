"""Which components a PodCliqueSet pass runs, by the kind each owns, and in which order.

As Grove's PodCliqueSet controller has it (``components/registry.go`` for the table, ``reconcilespec.go`` for the
order): an explicit table, made when the reconciler is, and orders that name kinds. A kind the orders name but the
table leaves out is skipped (as Grove skips MNNVL's ComputeDomain when the feature is off), so a feature that
brings a kind adds its component here, under its flag. Adding a kind is a module in this package, a line in the
table and its place in the orders; the controller does not change.
"""

from __future__ import annotations

import random

from scheduler.reconcile.client import ReconcileApi
from scheduler.reconcile.components.component import Component, ComponentKind
from scheduler.reconcile.components.compute_domain import ComputeDomains
from scheduler.reconcile.components.headless_service import HeadlessServices
from scheduler.reconcile.components.hpa import Autoscalers
from scheduler.reconcile.components.pcs_replica import PodCliqueSetReplicas
from scheduler.reconcile.components.pod import Pods
from scheduler.reconcile.components.podclique import PodCliques
from scheduler.reconcile.components.podgang import PodGangs
from scheduler.reconcile.components.resource_claim import ResourceClaims
from scheduler.reconcile.components.role import Roles
from scheduler.reconcile.components.role_binding import RoleBindings
from scheduler.reconcile.components.sa_token_secret import ServiceAccountTokenSecrets
from scheduler.reconcile.components.scaling_group import ScalingGroups
from scheduler.reconcile.components.scheduling_gate import SchedulingGates
from scheduler.reconcile.components.service_account import ServiceAccounts
from scheduler.reconcile.fanout import Fanout
from scheduler.reconcile.rules.features import Features
from scheduler.reconcile.status.conditions import Clock

__all__ = ["AFTER_STATUS", "CONVERGE", "TEARDOWN", "pcs_components"]

# A pass converges these in order, each reading what the ones before it left in the pass state.
CONVERGE: tuple[ComponentKind, ...] = (
    "PodCliqueScalingGroup",  # a group's PodCliques need its uid as their owner
    "PodClique",  # its live spec.replicas says how many pods there are
    "HeadlessService",
    "HorizontalPodAutoscaler",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ServiceAccountTokenSecret",  # before the pods that mount it
    "ResourceClaim",  # after their owners, before the pods that reference them
    "ComputeDomain",  # MNNVL, when on: before the pods that claim from it
    "Pod",
    "PodGang",  # lists the pods that now exist
    "PodSchedulingGate",  # lifts the gate of a pod its gang lists
)
# Then PodClique and PodCliqueScalingGroup status is written, and these act on it.
AFTER_STATUS: tuple[ComponentKind, ...] = ("PodCliqueSetReplica",)
# What a deleted PodCliqueSet left: what holds GPUs first, then what serves it, its identity last (a binding never
# outlives the account it names).
TEARDOWN: tuple[ComponentKind, ...] = (
    "PodCliqueScalingGroup",
    "PodClique",
    "Pod",
    "ResourceClaim",
    "ComputeDomain",
    "PodGang",
    "HeadlessService",
    "HorizontalPodAutoscaler",
    "RoleBinding",
    "Role",
    "ServiceAccount",
)


def pcs_components(
    *,
    api: ReconcileApi,
    clock: Clock,
    rng: random.Random,
    scheduler_name: str,
    initc_image: str,
    features: Features | None = None,
    fanout: Fanout | None = None,
) -> dict[ComponentKind, Component]:
    """Every component of a PodCliqueSet pass, by kind. ``rng`` draws pod-name suffixes; ``scheduler_name`` goes
    on every pod and PodGang; ``initc_image`` is the startup-order init container's; ``features`` the optional
    ones (MNNVL's ComputeDomains, only when on); ``fanout`` sends a pass's pod creates and gate lifts together."""
    fanout = fanout or Fanout()
    optional: dict[ComponentKind, Component] = {}
    if features is not None and features.mnnvl:
        optional["ComputeDomain"] = ComputeDomains(api)
    return optional | {
        "PodCliqueScalingGroup": ScalingGroups(api),
        "PodClique": PodCliques(api),
        "HeadlessService": HeadlessServices(api),
        "HorizontalPodAutoscaler": Autoscalers(api),
        "ServiceAccount": ServiceAccounts(api),
        "Role": Roles(api),
        "RoleBinding": RoleBindings(api),
        "ServiceAccountTokenSecret": ServiceAccountTokenSecrets(api),
        "ResourceClaim": ResourceClaims(api),
        "Pod": Pods(api, rng=rng, scheduler_name=scheduler_name, initc_image=initc_image, fanout=fanout),
        "PodGang": PodGangs(api, clock=clock, scheduler_name=scheduler_name),
        "PodSchedulingGate": SchedulingGates(api, fanout=fanout),
        "PodCliqueSetReplica": PodCliqueSetReplicas(api, clock=clock),
    }
