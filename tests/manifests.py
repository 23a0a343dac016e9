"""The manifests in deploy/, parsed once, and lookups the manifest tests share."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"


@functools.cache  # the files do not change during a run; parse them once
def documents() -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in sorted(DEPLOY.rglob("*.yaml")):
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
