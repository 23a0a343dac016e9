"""Each library whose internals ``api/http/fences/`` reaches into is held in ``pyproject.toml`` to one minor release,
the one its fence's test passed on, and that is the release installed: a bound dropped or widened by hand fails here,
naming the fence whose test must run on the new release first."""

from __future__ import annotations

import tomllib
from importlib.metadata import version

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import REPO_ROOT

FENCED = {"uvicorn": "uvicorn_fence", "h2": "h2_fence", "hpack": "hpack_fence", "hyperframe": "hyperframe_fence"}
FENCED["uvloop"] = "loop_fence"  # with asyncio's loop, bounded by the Python it comes with


def _requirements() -> dict[str, Requirement]:
    listed = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {canonicalize_name(r.name): r for r in map(Requirement, listed)}


@pytest.mark.parametrize("library", FENCED)
def test_a_fenced_library_is_bounded_to_one_minor_release_and_installed_within_it(library: str) -> None:
    fence = f"api/http/fences/{FENCED[library]}.py"
    assert (REPO_ROOT / fence).exists()
    requirement = _requirements().get(library)
    assert requirement is not None, f"{fence} relies on {library}'s internals: pyproject.toml must name {library}"
    floors = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
    ceilings = [Version(s.version) for s in requirement.specifier if s.operator == "<"]
    assert len(floors) == 1 and len(ceilings) == 1, f"{library}: expected >=X.Y,<X.Y+1, got {requirement.specifier}"
    (floor,), (ceiling,) = floors, ceilings
    assert (ceiling.major, ceiling.minor) == (floor.major, floor.minor + 1) and ceiling.micro == 0, (
        f"{library}{requirement.specifier} spans more than one minor release: {fence}'s test passed on one"
    )
    installed = Version(version(library))
    assert requirement.specifier.contains(installed), (
        f"{library} {installed} installed, outside {requirement.specifier}"
    )
