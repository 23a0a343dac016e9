"""The manifests in deploy/ as kustomize builds them, parsed once, and lookups the manifest tests share.

A user installs one overlay (``deploy/overlays/*``), optionally with components (``deploy/components/*``). Both are
entry points; from each, ``resources``, ``components``, ``configurations`` and patch files are followed into the
folders they name (``base/``, ``crds/``, ``reconciler/``). This reader needs no kubectl, so ``make test`` runs it;
``tests/deploy/test_install.py`` checks it against ``kubectl kustomize`` where kubectl is at hand.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
KUSTOMIZATION = "kustomization.yaml"
ENTRY_FOLDERS = ("overlays", "components")
NOT_INSTALLED = ("examples",)
"""Folders of YAML under deploy/ that no install applies: workloads for a user to try."""
# Every field a kustomization of ours uses; another one (say a generator reading files) would have to be followed
# here too, so an unknown field fails the reader instead of hiding the files it names.
_FIELDS = {"apiVersion", "kind", "resources", "components", "configurations", "patches", "images", "labels"}


class KustomizationError(ValueError):
    pass


def entry_points(root: Path = DEPLOY) -> list[Path]:
    """The overlays and components a user names, each a folder with a kustomization."""
    return sorted(p for folder in ENTRY_FOLDERS for p in (root / folder).iterdir() if (p / KUSTOMIZATION).is_file())


def _kustomization(folder: Path) -> dict[str, Any]:
    path = folder / KUSTOMIZATION
    if not path.is_file():
        raise KustomizationError(f"{folder} is named as a kustomization but holds no {KUSTOMIZATION}")
    found: dict[str, Any] = yaml.safe_load(path.read_text())
    unknown = set(found) - _FIELDS
    if unknown:
        raise KustomizationError(f"{path}: fields this reader does not follow: {sorted(unknown)}")
    return found


def _named(folder: Path, entry: str) -> Path:
    path = (folder / entry).resolve()
    if not path.exists():
        raise KustomizationError(f"{folder / KUSTOMIZATION} names {entry}, which does not exist")
    return path


def reached(folder: Path) -> tuple[set[Path], set[Path]]:
    """(resource files, every other file read: kustomizations, configurations, patch files) that building
    ``folder`` reads, following the folders it names."""
    resources: set[Path] = set()
    others: set[Path] = {(folder / KUSTOMIZATION).resolve()}
    found = _kustomization(folder)
    for entry in [*found.get("resources", []), *found.get("components", [])]:
        path = _named(folder, entry)
        if path.is_dir():
            more_resources, more_others = reached(path)
            resources |= more_resources
            others |= more_others
        else:
            resources.add(path)
    others |= {_named(folder, entry) for entry in found.get("configurations", [])}
    others |= {_named(folder, patch["path"]) for patch in found.get("patches", []) if "path" in patch}
    return resources, others


def manifest_files(root: Path = DEPLOY) -> set[Path]:
    """Every YAML file under ``root`` that is part of an install: all but the ``NOT_INSTALLED`` folders."""
    return {
        path.resolve()
        for pattern in ("*.yaml", "*.yml")
        for path in root.rglob(pattern)
        if path.relative_to(root).parts[0] not in NOT_INSTALLED
    }


def unreachable(root: Path = DEPLOY) -> list[Path]:
    """Manifests no overlay or component reads: shipped, but never installed."""
    read: set[Path] = set()
    for entry in entry_points(root):
        resources, others = reached(entry)
        read |= resources | others
    return sorted(manifest_files(root) - read)


@functools.cache  # the files do not change during a run; parse them once
def documents() -> list[tuple[Path, dict[str, Any]]]:
    """Every object some overlay or component installs, once each, with the file that holds it."""
    files: set[Path] = set()
    for entry in entry_points():
        files |= reached(entry)[0]
    found = []
    for path in sorted(files):
        found.extend((path, doc) for doc in yaml.safe_load_all(path.read_text()) if doc is not None)
    return found


def find(kind: str, name: str) -> dict[str, Any]:
    matches = [doc for _, doc in documents() if doc["kind"] == kind and doc["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in documents() if doc["kind"] == kind]


def scheduler_config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(find("ConfigMap", "grove-scheduler-config")["data"]["config.yaml"])
    return config


def pod_spec(deployment: str) -> dict[str, Any]:
    spec: dict[str, Any] = find("Deployment", deployment)["spec"]["template"]["spec"]
    return spec


def extender_args() -> dict[str, str]:
    container = pod_spec("grove-extender")["containers"][0]
    return dict(arg.removeprefix("--").split("=", 1) for arg in container["args"] if "=" in arg)
