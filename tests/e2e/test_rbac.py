"""Least privilege, proven: every rule of every shipped Role and ClusterRole is needed. For each rule, the role is
applied without it, the component restarted (a fresh token, fresh lists and watches) and given work that needs
the rule; its log must show the API server refusing exactly that rule's verb on that rule's resource. Then the
shipped manifest is applied again and the component restarted. The bindings of the second kube-scheduler to the
cluster's own roles are shown needed the same way, by deleting each. The MNNVL role, which ships apart and is applied
only with ``reconcile --mnnvl`` (after the NVIDIA DRA driver's CRD, served here by a stand-in), is applied for its
case alone, with the reconciler run with ``--mnnvl``, and deleted again afterwards.

(That nothing is refused under the shipped RBAC is checked after every other scenario: ``conftest.no_forbidden``.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.components import document
from benchmarks.controlplane.dra_driver import serve_compute_domains
from benchmarks.controlplane.install import DEPLOY, NAMESPACE
from benchmarks.controlplane.nodes import NodeSpec, create_nodes
from benchmarks.controlplane.supervisor import Child
from benchmarks.controlplane.workload import Gang, create_gangs
from tests.e2e.reads import apply_in, pods, wait_for
from tests.e2e.test_mnnvl import MNNVL_PCS

pytestmark = pytest.mark.forbidden_expected

ACCOUNT = {"extender": "grove-extender", "reconciler": "grove-reconciler", "scheduler": "grove-scheduler"}
LEASE = {"extender": "grove-extender", "scheduler": "grove-scheduler"}
# The API server's refusal to let a role be created that grants more than its creator holds.
ESCALATION = r"attempting to grant RBAC permissions not currently held"
# Shipped apart, for `reconcile --mnnvl` only: applied for its case, deleted after it.
MNNVL = "overlays/mnnvl/reconciler-rbac-mnnvl.yaml"
RECONCILER_RBAC = "overlays/standalone/reconciler-rbac.yaml"
SCHEDULER = "base/grove-scheduler.yaml"

# A PodCliqueSet that needs every kind of object the reconciler makes: cliques started in order (the init
# container's ServiceAccount, Role, RoleBinding and token Secret), a scaling group, an HPA, a topology binding; one
# that shares DRA ResourceClaims, made from its own template and from a ResourceClaimTemplate object; and one that
# Grove refuses (a SpecValid=False Warning event).
TRIGGER = """
apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: e2e-rbac-topology}
spec:
  levels:
  - {domain: rack, key: nvidia.com/gpu.clique}
  - {domain: host, key: kubernetes.io/hostname}
---
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: probe}
spec:
  replicas: 1
  template:
    cliqueStartupType: CliqueStartupTypeInOrder
    topologyConstraint: {topologyName: e2e-rbac-topology, pack: {preferred: rack}}
    cliques:
    - name: leader
      spec:
        roleName: leader
        replicas: 1
        podSpec: {schedulerName: grove, containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]}
        autoScalingConfig: {maxReplicas: 2}
    - name: worker
      spec:
        roleName: worker
        replicas: 1
        podSpec: {schedulerName: grove, containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]}
    podCliqueScalingGroups:
    - {name: group, cliqueNames: [worker], replicas: 1}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: e2e-rbac-gpu}
spec:
  spec:
    devices:
      requests:
      - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}
---
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: shared}
spec:
  replicas: 1
  template:
    resourceClaimTemplates:
    - name: scratch
      templateSpec:
        spec:
          devices:
            requests:
            - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}
    resourceSharing:
    - {name: scratch, scope: AllReplicas}
    - {name: e2e-rbac-gpu, scope: PerReplica}
    cliques:
    - name: only
      spec:
        roleName: only
        replicas: 1
        podSpec: {schedulerName: grove, containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: refused}
spec:
  replicas: 1
  template:
    cliqueStartupType: CliqueStartupTypeExplicit
    cliques:
    - name: only
      spec:
        roleName: only
        replicas: 1
        startsAfter: [missing]
        podSpec: {schedulerName: grove, containers: [{name: c, image: nginx}]}
"""


@dataclass(frozen=True)
class Case:
    component: str  # extender, reconciler or scheduler
    manifest: str
    kind: str
    name: str
    rule: int | None  # the rule dropped; None: the binding itself is deleted
    expect: str  # what the component's log must then show (a regex)
    verbs: tuple[str, ...] = ()  # drop only these verbs of the rule

    @property
    def flags(self) -> tuple[str, ...]:
        """The component's flags beyond the Deployment's."""
        return ("--mnnvl",) if self.manifest == MNNVL else ()

    @property
    def id(self) -> str:
        what = f"rule{self.rule}" if self.rule is not None else "binding"
        return f"{self.name}-{what}" + (f"-{'-'.join(self.verbs)}" if self.verbs else "")


def _denied(account: str, verbs: list[str], resources: list[str]) -> str:
    """The API server's RBAC refusal, as the component logs it (kube-scheduler's structured log escapes quotes)."""
    quote = r'\\?"'
    user = f"User {quote}{re.escape(f'system:serviceaccount:{NAMESPACE}:{account}')}{quote}"
    names = "|".join(map(re.escape, resources))
    return rf"forbidden: {user} cannot ({'|'.join(verbs)}) resource {quote}({names}){quote}"


def _rule_cases() -> list[Case]:
    roles = [
        ("extender", "base/extender-rbac.yaml", "ClusterRole", "grove-extender"),
        ("extender", "base/extender-rbac.yaml", "Role", "grove-extender-lease"),
        ("reconciler", RECONCILER_RBAC, "ClusterRole", "grove-reconciler"),
        ("reconciler", MNNVL, "ClusterRole", "grove-reconciler-mnnvl"),
        ("scheduler", SCHEDULER, "Role", "grove-scheduler-lease"),
    ]
    cases = []
    for component, manifest, kind, name in roles:
        for index, rule in enumerate(document(manifest, kind, name)["rules"]):
            expect = _denied(ACCOUNT[component], rule["verbs"], rule["resources"])
            if (name, rule["resources"]) == ("grove-reconciler", ["pods/status"]):
                # Never called either: the init container's Role grants pods/status get/list/watch, which RBAC lets
                # the reconciler create only while it holds them itself.
                expect = ESCALATION
            elif any(r.endswith("/finalizers") for r in rule["resources"]):
                # OwnerReferencesPermissionEnforcement (on in this control plane, as in some distributions): an owner
                # reference with blockOwnerDeletion needs `update` on the owner's finalizers.
                expect = r"cannot set blockOwnerDeletion"
            cases.append(Case(component, manifest, kind, name, index, expect))
    # The pods rule's `get` is never called: RBAC lets the reconciler create the init container's Role
    # (get/list/watch pods) only while it holds all three itself (its file, RECONCILER_RBAC, says so).
    pods = next(i for i, r in enumerate(document(RECONCILER_RBAC, "ClusterRole", "grove-reconciler")["rules"])
                if r["resources"] == ["pods"])  # fmt: skip
    cases.append(Case("reconciler", RECONCILER_RBAC, "ClusterRole", "grove-reconciler", pods, ESCALATION,
                      verbs=("get",)))  # fmt: skip
    scheduler = ACCOUNT["scheduler"]
    cases += [
        Case("scheduler", SCHEDULER, "ClusterRoleBinding", "grove-scheduler-as-kube-scheduler", None,
             _denied(scheduler, ["list", "watch"], ["pods", "nodes"])),
        Case("scheduler", SCHEDULER, "ClusterRoleBinding", "grove-scheduler-as-volume-scheduler", None,
             _denied(scheduler, ["list", "watch"], ["storageclasses"])),
        Case("scheduler", SCHEDULER, "RoleBinding", "grove-scheduler-auth-reader", None,
             _denied(scheduler, ["get", "list", "watch"], ["configmaps"])),
    ]  # fmt: skip
    return cases


def _without(case: Case) -> dict[str, Any]:
    role = deepcopy(document(case.manifest, case.kind, case.name))
    assert case.rule is not None
    if case.verbs:
        rule = role["rules"][case.rule]
        rule["verbs"] = [v for v in rule["verbs"] if v not in case.verbs]
    else:
        del role["rules"][case.rule]
    return role


def _stop(plane: ControlPlane, component: str) -> None:
    """SIGKILL, but kube-scheduler gets SIGTERM: it gives its Lease up, so the next one need not wait it out."""
    if component == "extender":
        assert plane.extender is not None
        plane.extender.child.stop(kill=True)
    elif component == "reconciler":
        assert plane.reconciler is not None
        plane.reconciler.stop(kill=True)
    else:
        assert plane.scheduler is not None
        plane.scheduler.stop()


def _start(plane: ControlPlane, component: str, *, ready: bool, flags: tuple[str, ...] = ()) -> Child:
    if component == "extender":
        assert plane.extender is not None
        return plane.start_extender(wait=ready, ports=plane.extender.ports).child
    if component == "reconciler":
        return plane.start_reconciler(extra=flags, wait=ready)
    return plane.start_scheduler(wait=ready)


def _trigger(plane: ControlPlane, namespace: str, case: Case) -> None:
    if case.component == "reconciler":
        apply_in(plane, namespace, yaml.safe_load_all(TRIGGER + ("---" + MNNVL_PCS if case.flags else "")))
    elif case.component == "extender" and case.rule is not None and "pods/eviction" in _dropped_resources(case):
        _preemption(plane, namespace)
    elif case.component == "extender":
        create_gangs(plane.api, namespace, [Gang("probe", 2)])  # bound, reported, an Event


EVICT_POOL = ("e2e-pool", "rbac-evict")


def _preemption(plane: ControlPlane, namespace: str) -> None:
    """A node of its own full of a low-priority gang, then a gang of higher priority that fits only there: the
    extender evicts (it asks first, with a dry run, which needs the same rule)."""
    name = "e2e-rbac-evict"
    if plane.api.find(f"/api/v1/nodes/{name}") is None:
        taint = {"key": EVICT_POOL[0], "value": EVICT_POOL[1], "effect": "NoSchedule"}
        create_nodes(plane.api, [NodeSpec(name, {"kubernetes.io/hostname": name, EVICT_POOL[0]: EVICT_POOL[1]},
                                          taints=(taint,))])  # fmt: skip
    for klass, value in (("e2e-rbac-low", 1), ("e2e-rbac-high", 1000)):
        if plane.api.find(f"/apis/scheduling.k8s.io/v1/priorityclasses/{klass}") is None:
            body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": klass},
                    "value": value}  # fmt: skip
            plane.api.create("/apis/scheduling.k8s.io/v1/priorityclasses", body)

    def gang(label: str, klass: str) -> Gang:
        return Gang(label, 4, priority_class=klass, class_on_pods=False, node_selector=(EVICT_POOL,),
                    tolerations=(EVICT_POOL,))  # fmt: skip

    create_gangs(plane.api, namespace, [gang("victim", "e2e-rbac-low")])
    wait_for(lambda: sum(bool(p["spec"].get("nodeName")) for p in pods(plane, namespace)) == 4, timeout=60,
             what="the low-priority gang bound")  # fmt: skip
    create_gangs(plane.api, namespace, [gang("preemptor", "e2e-rbac-high")])


@pytest.fixture
def restored(control_plane: ControlPlane) -> Iterator[Callable[[Case], None]]:
    """Re-applies a case's whole manifest (every role and binding as shipped; the MNNVL one is deleted, as it is not
    installed by default) and restarts the component, ready, with the Deployment's flags."""
    cases: list[Case] = []
    yield cases.append
    for case in cases:
        action = ("delete", "--ignore-not-found") if case.manifest == MNNVL else ("apply",)
        control_plane.kubectl(*action, "-f", str(DEPLOY / case.manifest))
        _stop(control_plane, case.component)
        _start(control_plane, case.component, ready=True)


@pytest.mark.parametrize("case", _rule_cases(), ids=lambda c: c.id)
def test_each_shipped_rule_is_needed(
    control_plane: ControlPlane, namespace: str, case: Case, restored: Callable[[Case], None]
) -> None:
    plane = control_plane
    restored(case)
    if case.flags:  # the DRA driver's CRD, then the manifest as shipped (its binding), as the README's install says
        serve_compute_domains(plane.kubectl)
        plane.kubectl("apply", "-f", str(DEPLOY / case.manifest))
    if case.rule is None:
        binding = document(case.manifest, case.kind, case.name)
        plane.kubectl("-n", binding["metadata"].get("namespace", NAMESPACE), "delete", case.kind.lower(), case.name)
    else:
        plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(_without(case)))
    _stop(plane, case.component)
    if case.rule is not None and "create" in _dropped_verbs(case) and "leases" in _dropped_resources(case):
        plane.kubectl("-n", NAMESPACE, "delete", "lease", LEASE[case.component])  # the rule creates it
    child = _start(plane, case.component, ready=False, flags=case.flags)
    _trigger(plane, namespace, case)
    pattern = re.compile(case.expect)
    wait_for(lambda: pattern.search(child.log_text()), timeout=60, every=1.0,
             what=f"{child.log.name} to show {case.expect}")  # fmt: skip


def _dropped_rule(case: Case) -> dict[str, Any]:
    assert case.rule is not None
    rule: dict[str, Any] = document(case.manifest, case.kind, case.name)["rules"][case.rule]
    return rule


def _dropped_verbs(case: Case) -> list[str]:
    return list(case.verbs) or list(_dropped_rule(case)["verbs"])


def _dropped_resources(case: Case) -> list[str]:
    return list(_dropped_rule(case)["resources"])
