"""The import contracts of pyproject.toml say what the folders hold: a hand-kept list in one is checked against the
code, so a component added to the reconciler cannot slip out of the rule that components never import each other."""

from __future__ import annotations

import ast
import tomllib
from typing import Any

from tests.conftest import REPO_ROOT

COMPONENTS = "scheduler.reconcile.components"


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _registered() -> set[str]:
    """The modules the registry takes a component from (every kind a pass converges or tears down)."""
    tree = ast.parse((REPO_ROOT / "scheduler/reconcile/components/registry.py").read_text())
    found = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(f"{COMPONENTS}.")
    }
    return found - {f"{COMPONENTS}.component"}


def test_the_independence_contract_names_every_registered_component() -> None:
    (contract,) = [c for c in _contracts() if c["type"] == "independence" and c["modules"][0].startswith(COMPONENTS)]
    listed = set(contract["modules"])
    registered = _registered()
    assert registered, "the registry names no component: this test reads it wrong"
    assert listed == registered, (
        f"components the registry uses but the contract leaves out: {sorted(registered - listed)}; "
        f"listed but not registered: {sorted(listed - registered)} (pyproject.toml, tool.importlinter)"
    )
