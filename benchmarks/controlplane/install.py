"""``deploy/`` applied with kubectl as the README's install section tells a user to, certificates included.

The Deployments are applied too (the API server validates them), but nothing runs them: there is no
kube-controller-manager or kubelet. ``components`` runs what their pods would run, from the same manifests, and
``secret_files`` writes each Secret's keys into a folder as a Secret volume would mount them.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.controlplane.kubectl import Kubectl

__all__ = ["CRDS", "DEPLOY", "NAMESPACE", "grove_extender", "install", "secret_files"]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NAMESPACE = "grove-system"
CRDS = (
    "podgangs.scheduler.grove.io",
    "clustertopologybindings.grove.io",
    "podcliquesets.grove.io",
    "podcliques.grove.io",
    "podcliquescalinggroups.grove.io",
)


def grove_extender() -> str:
    """The installed ``grove-extender`` command of this Python environment."""
    beside = Path(sys.executable).parent / "grove-extender"
    found = str(beside) if beside.exists() else shutil.which("grove-extender")
    if not found:
        raise RuntimeError("grove-extender is not installed in this environment (pip install -e '.[certs]')")
    return found


def install(kubectl: Kubectl, folder: Path) -> None:
    """The README's order: namespace, CRDs (the standalone set: no Grove operator here), the mTLS Secrets from
    ``grove-extender certs`` (the file deleted once applied), the extender, the second kube-scheduler, the
    reconciler, the routing policy and the preempt guard's ConfigMap."""
    kubectl("apply", "-f", str(DEPLOY / "base/namespace.yaml"))
    kubectl("apply", "-f", str(DEPLOY / "crds"))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{name}" for name in CRDS))
    certs = folder / "certs.yaml"
    subprocess.run([grove_extender(), "certs", "-o", str(certs)], check=True, capture_output=True)
    kubectl("apply", "-f", str(certs))
    certs.unlink()  # it holds private keys
    for manifest in (
        "base/extender-rbac.yaml",
        "base/extender.yaml",
        "base/grove-scheduler.yaml",
        "reconciler/reconciler-rbac.yaml",
        "reconciler/reconciler.yaml",
        "overlays/with-grove-operator/grove-operator-routing.yaml",
        "components/preempt-guard/default-scheduler-preempt-guard.yaml",
    ):
        kubectl("apply", "-f", str(DEPLOY / manifest))


def secret_files(kubectl: Kubectl, name: str, folder: Path, *, namespace: str = NAMESPACE) -> Path:
    """Each key of Secret ``name`` as a file in ``folder`` (mode 0600), as a Secret volume mounts it."""
    secret = kubectl.json("-n", namespace, "get", "secret", name)
    folder.mkdir(parents=True, exist_ok=True)
    for key, value in secret["data"].items():
        path = folder / key
        path.write_bytes(base64.b64decode(value))
        path.chmod(0o600)
    return folder
