"""The reconciler kept to what is its own, on the real API server.

- ``deploy/reconciler/reconciler-ownership-policy.yaml``: the reconciler's account, which RBAC lets patch and delete
  any pod, is refused by the ValidatingAdmissionPolicy — with the policy's message — on a pod (or ServiceAccount)
  that is not labelled as the reconciler's, including relabelling it into one; the reconciler's own pods are made,
  patched and deleted as before, and the admin is not affected.
- ``deploy/overlays/namespaced/reconciler-rbac-namespaced.yaml``: with the cluster-wide binding deleted, the
  reconciler run with ``--namespace`` becomes ready (its informers list and watch only there) and converges
  PodCliqueSets that need every kind it makes, with no 403 in its log (``conftest.no_forbidden``); a PodCliqueSet in
  another namespace is left alone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import yaml

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.components import document
from benchmarks.controlplane.install import DEPLOY
from benchmarks.controlplane.kubectl import Kubectl, KubectlError
from benchmarks.controlplane.workload import Gang, pod_manifest
from tests.e2e.reads import all_whole, apply_in, clear_namespace, condition, gang_state, podgangs, pods, wait_for
from tests.e2e.test_rbac import TRIGGER

POLICY = document(
    "reconciler/reconciler-ownership-policy.yaml", "ValidatingAdmissionPolicy", "grove-reconciler-owned-objects"
)
MESSAGE = POLICY["spec"]["validations"][0]["message"]
OURS = "app.kubernetes.io/managed-by=grove-operator"
PART_OF = "app.kubernetes.io/part-of"
EXAMPLES = DEPLOY / "examples"


def _as_reconciler(plane: ControlPlane) -> Kubectl:
    return Kubectl(plane.assets["kubectl"], plane.account_kubeconfig("grove-reconciler"))


def _foreign_pod(plane: ControlPlane, namespace: str) -> str:
    """A user's pod, not the reconciler's (no labels); schedulerName no scheduler serves, so it stays put."""
    body = pod_manifest(Gang("user", 1, gpus=0, member=False, scheduler="nobody"), "user-pod", namespace)
    plane.api.create(f"/api/v1/namespaces/{namespace}/pods", body)
    return "user-pod"


def _whole(plane: ControlPlane, namespace: str, pcs: str) -> bool:
    """Every PodGang of PodCliqueSet ``pcs`` (at least one) has every pod it lists bound."""
    gangs = [g for g in podgangs(plane, namespace) if g["metadata"]["name"].startswith(f"{pcs}-")]
    by_name = {p["metadata"]["name"]: p for p in pods(plane, namespace)}
    return bool(gangs) and all(done == total for done, total in (gang_state(g, by_name) for g in gangs))


def _denied(kubectl: Kubectl, *args: str) -> str:
    with pytest.raises(KubectlError) as refused:
        kubectl(*args)
    return refused.value.stderr


# (what the reconciler's account tries on the user's pod, as kubectl args after -n NS)
FOREIGN_WRITES = [
    pytest.param(("patch", "pod", "user-pod", "--type=json", "-p",
                  '[{"op": "replace", "path": "/spec/containers/0/image", "value": "attacker/image"}]'),
                 id="patch-image"),
    pytest.param(("label", "pod", "user-pod", "owner=grove"), id="patch-label"),
    pytest.param(("label", "pod", "user-pod", OURS), id="relabel-into-ours"),
    pytest.param(("delete", "pod", "user-pod", "--wait=false"), id="delete"),
    pytest.param(("delete", "serviceaccount", "default", "--wait=false"), id="delete-serviceaccount"),
]  # fmt: skip


@pytest.mark.parametrize("args", FOREIGN_WRITES)
def test_the_reconcilers_account_is_refused_on_objects_not_its_own(
    control_plane: ControlPlane, namespace: str, args: tuple[str, ...]
) -> None:
    plane = control_plane
    _foreign_pod(plane, namespace)
    before = plane.api.get(f"/api/v1/namespaces/{namespace}/pods/user-pod")
    stderr = _denied(_as_reconciler(plane), "-n", namespace, *args)
    assert "ValidatingAdmissionPolicy 'grove-reconciler-owned-objects'" in stderr and MESSAGE in stderr, stderr
    after = plane.api.get(f"/api/v1/namespaces/{namespace}/pods/user-pod")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], "the pod was changed"
    assert plane.api.find(f"/api/v1/namespaces/{namespace}/serviceaccounts/default") is not None
    # RBAC allowed it (the policy, not a missing rule, refused it), and the policy judges this account only.
    plane.kubectl("-n", namespace, *args)


def test_the_reconcilers_account_may_not_create_what_is_not_labelled_its_own(
    control_plane: ControlPlane, namespace: str
) -> None:
    body = pod_manifest(Gang("user", 1, gpus=0, member=False, scheduler="nobody"), "made", namespace)
    kubectl = _as_reconciler(control_plane)
    with pytest.raises(KubectlError) as refused:
        kubectl("-n", namespace, "create", "-f", "-", stdin=yaml.safe_dump(body))
    assert MESSAGE in refused.value.stderr
    body["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "grove-operator"}
    kubectl("-n", namespace, "create", "-f", "-", stdin=yaml.safe_dump(body))


def test_the_reconcilers_own_pods_are_made_patched_and_deleted_as_before(
    control_plane: ControlPlane, namespace: str
) -> None:
    plane = control_plane
    (pcs,) = yaml.safe_load_all((EXAMPLES / "multinode-aggregated.yaml").read_text())
    apply_in(plane, namespace, [pcs])  # created gated, gates lifted (patches), bound: all through the policy
    wait_for(lambda: all_whole(plane, namespace, expected_gangs=2), timeout=120, what="both gangs whole")
    kubectl = _as_reconciler(plane)
    victim = pods(plane, namespace)[0]["metadata"]["name"]
    kubectl("-n", namespace, "annotate", "pod", victim, "e2e/checked=yes")
    kubectl("-n", namespace, "delete", "pod", victim, "--wait=false")
    wait_for(lambda: all_whole(plane, namespace, expected_gangs=2) and victim not in {
        p["metadata"]["name"] for p in pods(plane, namespace)}, timeout=120,
        what="the deleted pod replaced by the reconciler and its gang whole again")  # fmt: skip


# --- the namespace-scoped install ----------------------------------------------------------------------------------


@pytest.fixture
def namespaced(control_plane: ControlPlane, namespace: str) -> Iterator[str]:
    """The reconciler as the namespace-scoped install runs it: the cluster-wide binding gone, the namespaced RBAC
    applied into ``namespace``, ``--namespace`` on its command. Afterwards the shipped install again."""
    plane = control_plane
    manifest = str(DEPLOY / "overlays/namespaced/reconciler-rbac-namespaced.yaml")
    try:
        # Stopped before its binding goes: the cluster-wide reconciler may still be finishing an earlier scenario's
        # set, and a call of it in between is a 403 the no-403 check rightly reports.
        assert plane.reconciler is not None
        plane.reconciler.stop(kill=True)
        plane.kubectl("delete", "clusterrolebinding", "grove-reconciler")
        plane.kubectl("apply", "-n", namespace, "-f", manifest)
        plane.start_reconciler(extra=(f"--namespace={namespace}",), wait=True)
        yield namespace
    finally:
        if plane.reconciler is not None:
            plane.reconciler.stop(kill=True)  # likewise before its Role goes
        plane.kubectl("apply", "-f", str(DEPLOY / "overlays/standalone/reconciler-rbac.yaml"))
        plane.kubectl("delete", "-n", namespace, "-f", manifest, "--ignore-not-found")
        plane.start_reconciler(wait=True)


def test_the_namespaced_install_suffices_and_keeps_to_its_namespace(
    control_plane: ControlPlane, namespaced: str
) -> None:
    plane, namespace = control_plane, namespaced
    other = f"{namespace}-other"
    plane.ensure_namespace(other)
    try:
        (pcs,) = yaml.safe_load_all((EXAMPLES / "multinode-aggregated.yaml").read_text())
        apply_in(plane, other, [pcs])
        # Every kind the reconciler makes, a topology lookup (the cluster-scoped read), and a refused set.
        apply_in(plane, namespace, yaml.safe_load_all(TRIGGER))
        wait_for(lambda: _whole(plane, namespace, "probe") and pods(plane, namespace, f"{PART_OF}=shared"),
                 timeout=120, what="probe's gangs whole and shared's pods made",
                 show=lambda: [g["metadata"]["name"] for g in podgangs(plane, namespace)])  # fmt: skip
        claims = plane.api.items(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims")
        assert len(claims) >= 2, claims  # one from the set's own template, one from the ResourceClaimTemplate
        for kind in ("horizontalpodautoscalers", "rolebindings"):
            group = "autoscaling/v2" if kind.startswith("h") else "rbac.authorization.k8s.io/v1"
            assert plane.api.items(f"/apis/{group}/namespaces/{namespace}/{kind}"), kind
        refused = plane.api.get(f"/apis/grove.io/v1alpha1/namespaces/{namespace}/podcliquesets/refused")
        assert (condition(refused, "SpecValid") or {}).get("status") == "False", refused.get("status")
        time.sleep(3)  # the other namespace's set had as long as these to be picked up; give it a little more
        assert pods(plane, other) == [] and podgangs(plane, other) == [], "the reconciler wrote outside its namespace"
        assert plane.reconciler_probe("/readyz")[0] == plane.reconciler_probe("/healthz")[0] == 200
    finally:
        clear_namespace(plane, other)


def test_the_reconcilers_probes_say_ready_once_synced(control_plane: ControlPlane) -> None:
    status, body = control_plane.reconciler_probe("/readyz")
    assert (status, body) == (200, "ok: informers synced; leader: none elected (one replica)\n")
    assert control_plane.reconciler_probe("/healthz") == (200, "ok\n")
