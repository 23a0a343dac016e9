"""The install on the real API server (v1.36): every overlay and component passes a server-side dry run,
``grove-extender certs --apply`` writes (and renews) the two Secrets with no file, and ``kubectl delete -k`` leaves
nothing behind.

The session's control plane is itself installed as a user installs it (``benchmarks/controlplane/install.py``: a
kustomization naming the ``standalone`` overlay and the ``preempt-guard`` component, ``kubectl apply -k``, then
``certs --apply``); every other scenario runs on that install. Uninstalling needs a plane of its own, taken stock of
before the install and after the uninstall.
"""

from __future__ import annotations

import base64
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from benchmarks.controlplane.assets import Assets
from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.install import DEPLOY, NAMESPACE, grove_extender, kustomization
from benchmarks.controlplane.kubectl import Kubectl
from benchmarks.controlplane.nodes import gpu_nodes
from tests.e2e.reads import all_whole, apply_in, clear_namespace, wait_for

OVERLAYS = sorted(p.name for p in (DEPLOY / "overlays").iterdir())
COMPONENTS = sorted(p.name for p in (DEPLOY / "components").iterdir())
CERT_MANAGER = ("issuers", "Issuer"), ("certificates", "Certificate")
SERVED = "grove-workloads"  # the namespace deploy/overlays/namespaced serves


def _cert_manager_stand_in(kubectl: Kubectl, *, delete: bool = False) -> None:
    """cert-manager's two kinds, names only (no schema, no controller: cert-manager is not here), so that the
    component's objects can be dry-run: that checks their group, version, kinds and namespace, not their fields."""
    for plural, kind in CERT_MANAGER:
        crd = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.cert-manager.io"},
            "spec": {
                "group": "cert-manager.io",
                "scope": "Namespaced",
                "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
            },
        }  # fmt: skip
        if delete:
            kubectl("delete", "--ignore-not-found", "crd", crd["metadata"]["name"])
        else:
            kubectl("apply", "-f", "-", stdin=yaml.safe_dump(crd))
            kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{plural}.cert-manager.io")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_overlay_passes_a_server_side_dry_run(control_plane: ControlPlane, overlay: str) -> None:
    if overlay == "namespaced":
        control_plane.ensure_namespace(SERVED)  # it must exist, as its kustomization says
    out = control_plane.kubectl("apply", "--dry-run=server", "-k", str(DEPLOY / "overlays" / overlay))
    assert "(server dry run)" in out


@pytest.mark.parametrize("component", COMPONENTS)
def test_each_component_passes_a_server_side_dry_run_on_the_standalone_overlay(
    control_plane: ControlPlane, component: str, tmp_path: Path
) -> None:
    plane = control_plane
    mine = kustomization(tmp_path / "mine", overlay="standalone", components=(component,))
    if component == "cert-manager":
        _cert_manager_stand_in(plane.kubectl)
    try:
        out = plane.kubectl("apply", "--dry-run=server", "-k", str(mine))
    finally:
        if component == "cert-manager":
            _cert_manager_stand_in(plane.kubectl, delete=True)
    assert "(server dry run)" in out


def _certs(plane: ControlPlane, namespace: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [
        grove_extender(),
        "certs",
        "--apply",
        f"--kubeconfig={plane.kubectl.kubeconfig}",
        f"--namespace={namespace}",
    ]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=120)


def test_certs_apply_writes_the_secrets_with_no_file_and_renews_them(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = control_plane
    missing = _certs(plane, "e2e-certs-missing", tmp_path)
    assert missing.returncode == 1
    assert "namespace e2e-certs-missing does not exist" in missing.stderr and "kubectl apply -k" in missing.stderr
    namespace = "e2e-certs"
    plane.ensure_namespace(namespace)
    cas = []
    for expected in ("created", "replaced"):
        done = _certs(plane, namespace, tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stderr.count(f" {expected}") == 2
        secrets = {s["metadata"]["name"]: s for s in plane.api.items(f"/api/v1/namespaces/{namespace}/secrets")}
        server, client = secrets["grove-extender-tls"], secrets["grove-scheduler-extender-client"]
        assert server["type"] == client["type"] == "kubernetes.io/tls"
        assert set(server["data"]) == set(client["data"]) == {"tls.crt", "tls.key", "ca.crt"}
        assert server["data"]["ca.crt"] == client["data"]["ca.crt"], "one CA signs both"
        assert [f["manager"] for f in server["metadata"]["managedFields"]] == ["grove-extender-certs"]
        cert = x509.load_pem_x509_certificate(_decoded(server, "tls.crt"))
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert f"grove-extender.{namespace}.svc" in names.get_values_for_type(x509.DNSName)
        cas.append(server["data"]["ca.crt"])
    assert cas[0] != cas[1], "a renewal issues a new CA"
    assert list(tmp_path.iterdir()) == [], "no key on disk"
    plane.api.delete(f"/api/v1/namespaces/{namespace}/secrets")


def _decoded(secret: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


# --- uninstall --------------------------------------------------------------------------------------------------

Key = tuple[str, str, str]  # resource, namespace, name
# Left by no install: Events expire by themselves (the API server's --event-ttl), and the API server and the
# kubelet stand-in renew their own Leases.
_TRANSIENT = {"events", "events.events.k8s.io"}


def _inventory(kubectl: Kubectl) -> set[Key]:
    """Every object of every listable kind, in every namespace."""
    kinds = [k for k in kubectl("api-resources", "--verbs=list", "-o", "name").split() if k not in _TRANSIENT]
    listed = kubectl.json("get", ",".join(kinds), "-A", "--ignore-not-found")
    return {(item["kind"], item["metadata"].get("namespace", ""), item["metadata"]["name"]) for item in listed["items"]}


def _namespace_controller(plane: ControlPlane, namespace: str) -> list[Key]:
    """What kube-controller-manager's namespace controller does for a deleted namespace (none runs here): delete
    everything left in it, then finalize it. Returns what it found."""
    wait_for(lambda: plane.api.get(f"/api/v1/namespaces/{namespace}")["metadata"].get("deletionTimestamp"),
             timeout=30, what=f"namespace {namespace} deleted")  # fmt: skip
    kinds = plane.kubectl("api-resources", "--verbs=list,delete", "--namespaced", "-o", "name").split()
    found = plane.kubectl.json("get", ",".join(kinds), "-n", namespace, "--ignore-not-found")["items"]
    left = sorted((i["kind"], namespace, i["metadata"]["name"]) for i in found)
    for kind in kinds:
        plane.kubectl("-n", namespace, "delete", kind, "--all", "--ignore-not-found", "--wait=false")
    body = plane.api.get(f"/api/v1/namespaces/{namespace}")
    body["spec"]["finalizers"] = []
    plane.api.call("PUT", f"/api/v1/namespaces/{namespace}/finalize", body)
    wait_for(lambda: plane.api.find(f"/api/v1/namespaces/{namespace}") is None or None, timeout=60,
             what=f"namespace {namespace} gone")  # fmt: skip
    return left


@pytest.fixture
def fresh_plane(assets: Assets, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    base = Path(os.environ["E2E_LOGS"]) / "uninstall" if os.environ.get("E2E_LOGS") else None
    folder = base or tmp_path_factory.mktemp("uninstall")
    with ControlPlane.start(assets, folder, nodes=gpu_nodes(18), installed=False) as plane:
        yield plane


def test_delete_k_leaves_nothing_behind(fresh_plane: ControlPlane, figure: list[str]) -> None:
    plane = fresh_plane
    workload = "e2e-uninstall"
    plane.ensure_namespace(workload)
    before = _inventory(plane.kubectl)
    plane.install()
    made = _inventory(plane.kubectl) - before
    expected = {
        ("Deployment", NAMESPACE, "grove-extender"),
        ("CustomResourceDefinition", "", "podgangs.scheduler.grove.io"),
        ("Secret", NAMESPACE, "grove-extender-tls"),
    }
    assert expected <= made, "the stock taken sees what the install made"
    plane.start_extender()
    plane.start_reconciler()
    plane.start_scheduler()
    apply_in(plane, workload, yaml.safe_load_all((DEPLOY / "examples" / "multinode-aggregated.yaml").read_text()))
    wait_for(lambda: all_whole(plane, workload, expected_gangs=2), timeout=120, what="the example bound whole")
    clear_namespace(plane, workload)  # the user deletes their workload first, as the README says
    for child in (plane.scheduler, plane.reconciler, plane.extender.child if plane.extender else None):
        if child is not None:
            child.stop()  # what deleting the Deployments does to their pods
    assert plane.installed is not None
    started = time.monotonic()
    plane.kubectl("delete", "-k", str(plane.installed), "--wait=false")
    in_namespace = _namespace_controller(plane, NAMESPACE)
    wait_for(lambda: not any(k[0] == "CustomResourceDefinition" for k in _inventory(plane.kubectl) - before) or None,
             timeout=60, what="our CRDs gone")  # fmt: skip
    figure.append(f"uninstalled in {time.monotonic() - started:.1f} s; left in {NAMESPACE} for the namespace "
                  f"controller: {', '.join(f'{k}/{n}' for k, _, n in in_namespace)}")  # fmt: skip
    assert _inventory(plane.kubectl) - before == set()
