"""Where the control plane's binaries come from: the folder named by ``KUBEBUILDER_ASSETS`` (envtest's convention)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BINARIES", "HOW_TO_PROVIDE", "Assets", "find_assets"]

BINARIES = ("etcd", "kube-apiserver", "kube-scheduler", "kubectl")
HOW_TO_PROVIDE = (
    "set KUBEBUILDER_ASSETS to a folder holding etcd, kube-apiserver, kube-scheduler and kubectl (v1.36; "
    "`setup-envtest use 1.36 -p path` gives all but kube-scheduler, which is in the Kubernetes server release)"
)


@dataclass(frozen=True)
class Assets:
    folder: Path

    def __getitem__(self, binary: str) -> str:
        return str(self.folder / binary)


def find_assets(environ: Mapping[str, str] = os.environ) -> Assets | str:
    """The binaries, or one line saying why not and how to provide them."""
    given = environ.get("KUBEBUILDER_ASSETS", "")
    if not given:
        return f"KUBEBUILDER_ASSETS is not set: {HOW_TO_PROVIDE}"
    folder = Path(given)
    missing = [name for name in BINARIES if not os.access(folder / name, os.X_OK)]
    if missing:
        return f"KUBEBUILDER_ASSETS={given} lacks {', '.join(missing)}: {HOW_TO_PROVIDE}"
    return Assets(folder)
