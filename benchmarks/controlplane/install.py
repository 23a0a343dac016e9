"""The install as the README's install section has a user make it: a kustomization of their own naming the
``standalone`` overlay and a component, ``kubectl apply -k`` of it, then ``grove-extender certs --apply``.

The Deployments are applied too (the API server validates and stores them), but nothing runs them: there is no
kube-controller-manager or kubelet. ``components`` runs what their pods would run, read back from the Deployments the
API server holds, and ``secret_files`` writes each Secret's keys into a folder as a Secret volume would mount them.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from benchmarks.controlplane.kubectl import Kubectl

__all__ = [
    "COMPONENTS",
    "CRDS",
    "DEPLOY",
    "NAMESPACE",
    "OVERLAY",
    "grove_extender",
    "install",
    "kustomization",
    "secret_files",
]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NAMESPACE = "grove-system"
OVERLAY = "standalone"  # no Grove operator here: our CRDs and the reconciler
# The preempt guard's ConfigMap is where the default scheduler's extender entry is read from (``components``).
COMPONENTS = ("preempt-guard",)
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


def kustomization(
    folder: Path,
    *,
    overlay: str = OVERLAY,
    components: tuple[str, ...] = COMPONENTS,
    images: tuple[dict[str, str], ...] = (),
) -> Path:
    """``folder`` made a user's kustomization, as the README shows one (paths relative: kustomize refuses absolute
    ones). No ``images:`` entry by default: the image is never pulled here, so the manifests' own name stands."""
    folder.mkdir(parents=True, exist_ok=True)
    relative = os.path.relpath(DEPLOY, folder)
    body: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [f"{relative}/overlays/{overlay}"],
        "components": [f"{relative}/components/{name}" for name in components],
        "images": list(images),
    }
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    return folder


def install(kubectl: Kubectl, folder: Path) -> Path:
    """The README's two commands, on the kustomization written into ``folder``; returns it (for uninstalling)."""
    target = kustomization(folder)
    kubectl("apply", "-k", str(target))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{name}" for name in CRDS))
    certs = [grove_extender(), "certs", "--apply", f"--kubeconfig={kubectl.kubeconfig}"]
    done = subprocess.run(certs, capture_output=True, text=True, cwd=folder, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"grove-extender certs --apply exited {done.returncode}: {done.stderr.strip()}")
    return target


def secret_files(kubectl: Kubectl, name: str, folder: Path, *, namespace: str = NAMESPACE) -> Path:
    """Each key of Secret ``name`` as a file in ``folder`` (mode 0600), as a Secret volume mounts it."""
    secret = kubectl.json("-n", namespace, "get", "secret", name)
    folder.mkdir(parents=True, exist_ok=True)
    for key, value in secret["data"].items():
        path = folder / key
        path.write_bytes(base64.b64decode(value))
        path.chmod(0o600)
    return folder
