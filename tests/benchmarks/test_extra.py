"""``pip install 'grove-extender[bench]'`` is enough to run every benchmark: each third-party module a file under
``benchmarks/`` imports comes from a runtime dependency or the ``bench`` extra (or one of theirs). Read from the
code, not by running it: ``bench_e2e`` once needed ``cryptography``, which only the ``certs`` extra installed."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata

from tests.conftest import REPO_ROOT

OURS = {"api", "topology", "placement", "scheduler", "benchmarks", "tests"}


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _with_their_own(names: set[str]) -> set[str]:
    """The distributions and everything they require (what pip installs with them)."""
    found: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo.extend(_name(r) for r in requires if "extra ==" not in r)
    return found


def _imported(path: str) -> set[str]:
    tree = ast.parse((REPO_ROOT / path).read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_the_bench_extra_installs_what_every_benchmark_imports() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in [*project["dependencies"], *project["optional-dependencies"]["bench"]]}
    installed = _with_their_own(declared)
    providers = metadata.packages_distributions()
    missing: dict[str, set[str]] = {}
    for file in sorted(REPO_ROOT.glob("benchmarks/**/*.py")):
        path = str(file.relative_to(REPO_ROOT))
        for module in _imported(path) - OURS - set(sys.stdlib_module_names):
            dists = {d.lower().replace("_", "-") for d in providers.get(module, [module])}
            if not dists & installed:
                missing.setdefault(module, set()).add(path)
    assert not missing, f"imported by benchmarks but in neither the dependencies nor the bench extra: {missing}"
