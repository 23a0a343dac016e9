"""The install as kustomize builds it: every manifest under deploy/ is installed by some overlay or component, and
(where kubectl is at hand) every overlay renders to exactly the objects its files hold, with the image set in one place.

The reachability checks read the kustomizations themselves (``tests/deploy/manifests.py``), so ``make test`` runs
them with no kubectl; the rendering tests run ``kubectl kustomize`` from ``KUBEBUILDER_ASSETS`` and skip with one
line without it. The server-side dry run of every overlay on v1.36 is ``tests/e2e/test_install.py``'s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.controlplane.install import kustomization
from tests.conftest import REPO_ROOT
from tests.deploy.manifests import DEPLOY, KUSTOMIZATION, KustomizationError, entry_points, reached, unreachable

Key = tuple[str, str, str]  # kind, namespace, name


def test_every_manifest_is_installed_by_an_overlay_or_a_component() -> None:
    assert unreachable() == [], "shipped but never installed: list them in a kustomization"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "deploy"
    shutil.copytree(DEPLOY, root)
    return root


def test_a_manifest_no_kustomization_lists_is_reported(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "base" / "stray.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stray}\n")
    base = root / "base" / KUSTOMIZATION
    base.write_text(base.read_text().replace("- extender.yaml\n", ""))
    assert unreachable(root) == [(root / "base" / name).resolve() for name in ("extender.yaml", "stray.yaml")]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(("- ../../crds\n", "- ../../crd\n"), "names ../../crd, which does not exist", id="missing-folder"),
        pytest.param(("resources:\n", "secretGenerator: []\nresources:\n"), "secretGenerator", id="unknown-field"),
    ],
)
def test_a_kustomization_the_reader_cannot_follow_is_refused(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    root = _copy(tmp_path)
    standalone = root / "overlays" / "standalone" / KUSTOMIZATION
    standalone.write_text(standalone.read_text().replace(*change))
    with pytest.raises(KustomizationError, match=message):
        unreachable(root)


def test_the_readme_names_every_overlay_and_component() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    for entry in entry_points():
        assert f"deploy/{entry.relative_to(DEPLOY.resolve())}" in readme, f"{entry.name} is not in the README"


# --- rendered by kubectl ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kubectl() -> str:
    folder = os.environ.get("KUBEBUILDER_ASSETS", "")
    binary = Path(folder) / "kubectl"
    if not folder or not os.access(binary, os.X_OK):
        pytest.skip("kubectl kustomize: set KUBEBUILDER_ASSETS to a folder holding kubectl (v1.36)")
    return str(binary)


def _render(kubectl: str, folder: Path) -> list[dict[str, Any]]:
    done = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def _keys(docs: list[dict[str, Any]]) -> set[Key]:
    return {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in docs}


def _file_keys(files: set[Path]) -> set[Key]:
    return _keys([doc for path in files for doc in yaml.safe_load_all(path.read_text()) if doc])


@pytest.mark.parametrize("overlay", [p.name for p in entry_points() if p.parent.name == "overlays"])
def test_each_overlay_renders_exactly_the_objects_its_files_hold(kubectl: str, overlay: str) -> None:
    folder = DEPLOY / "overlays" / overlay
    rendered, files = _keys(_render(kubectl, folder)), _file_keys(reached(folder)[0])
    # A file may leave an object's namespace to the overlay (the namespaced Role): then any is fine.
    assert {(kind, name) for kind, _, name in rendered} == {(kind, name) for kind, _, name in files}
    assert {key for key in files if key[1]} <= rendered


@pytest.mark.parametrize("component", [p.name for p in entry_points() if p.parent.name == "components"])
def test_each_component_adds_its_objects_to_an_overlay(kubectl: str, component: str, tmp_path: Path) -> None:
    user = kustomization(tmp_path / "mine", overlay="standalone", components=(component,))
    rendered = _keys(_render(kubectl, user))
    standalone = _keys(_render(kubectl, DEPLOY / "overlays" / "standalone"))
    assert rendered == standalone | _file_keys(reached(DEPLOY / "components" / component)[0])
    assert rendered > standalone


def _images(docs: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Per Deployment: every container image and every env value that names one."""
    found: dict[str, set[str]] = {}
    for doc in docs:
        if doc["kind"] == "Deployment":
            for container in doc["spec"]["template"]["spec"]["containers"]:
                values = {e.get("value", "") for e in container.get("env", [])}
                found.setdefault(doc["metadata"]["name"], set()).update(
                    {container["image"]} | {v for v in values if "grove-extender:" in v}
                )
    return found


def test_one_images_entry_sets_every_image_of_ours_the_init_container_included(kubectl: str, tmp_path: Path) -> None:
    image = {"name": "grove-extender", "newName": "registry.example/grove-extender", "newTag": "1.2.3"}
    user = kustomization(tmp_path / "mine", overlay="mnnvl", components=("preempt-guard",), images=(image,))
    docs = _render(kubectl, user)
    assert "grove-extender:0.1.0" not in yaml.safe_dump_all(docs), "an image of ours left unset"
    images = _images(docs)
    assert images["grove-extender"] == images["grove-reconciler"] == {"registry.example/grove-extender:1.2.3"}
    (reconciler,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "grove-reconciler"]
    command = reconciler["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--initc-image") + 1] == "$(INITC_IMAGE)"
    assert command[-1] == "--mnnvl", "the mnnvl overlay turns the feature on"
    assert images["grove-scheduler"] == {"registry.k8s.io/kube-scheduler:v1.36.0"}, "not ours: left alone"
