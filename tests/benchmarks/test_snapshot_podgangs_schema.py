"""Every PodGang in every shipped snapshot is one an API server with Grove's PodGang CRD would accept as is.

Snapshots are meant to be ``kubectl get … -o json`` output; a PodGang the CRD would refuse (a condition without
``reason`` or ``message``) or prune could never have come from a cluster, so replays over it would prove nothing.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO_ROOT
from tests.crd_schema import CRDS, crd_schema, violations

SNAPSHOTS = REPO_ROOT / "benchmarks" / "snapshots"


def _items(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode()
    document = json.loads(text) if text.lstrip()[:1] in ("{", "[") else yaml.safe_load(text)
    items: list[dict[str, Any]] = document["items"] if isinstance(document, dict) else document
    return items


def _shipped() -> list[Path]:
    found = sorted(p for p in SNAPSHOTS.iterdir() if p.is_file() and not p.name.startswith("."))
    assert any(p.name == "demo.json" for p in found), "the demo snapshot ships with the repository"
    return found


@pytest.mark.parametrize("path", _shipped(), ids=lambda p: p.name)
def test_every_podgang_validates_against_the_crd(path: Path) -> None:
    schema = crd_schema(CRDS / "podgang.yaml")
    gangs = [item for item in _items(path) if item.get("kind") == "PodGang"]
    found = {g["metadata"]["name"]: violations(g, schema) for g in gangs}
    assert {name: problems for name, problems in found.items() if problems} == {}


def test_the_check_catches_a_condition_without_a_message() -> None:
    (gang, *_) = [item for item in _items(SNAPSHOTS / "demo.json") if item.get("kind") == "PodGang"]
    del gang["status"]["conditions"][0]["message"]
    assert violations(gang, crd_schema(CRDS / "podgang.yaml")) == [".status.conditions[0].message: required"]
