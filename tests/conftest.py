"""Shared test set-up: hypothesis profiles, and where the tests' own fixtures live."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps failing examples in ./.hypothesis by default; tests write only under their tmp dirs, and CI
# starts from a fresh clone where a saved example would never be replayed anyway: no database. No per-example
# deadline either (a loaded 2-core machine makes any deadline a coin toss). On CI (``CI=true``) examples are derived
# from each test, not drawn at random, so a failure there reproduces exactly. Tests' own ``max_examples`` stay modest.
settings.register_profile("grove-extender", database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "grove-extender-ci", parent=settings.get_profile("grove-extender"), derandomize=True, print_blob=True
)
settings.load_profile("grove-extender-ci" if os.environ.get("CI", "").lower() == "true" else "grove-extender")

REPO_ROOT = Path(__file__).resolve().parents[1]
_HYPOTHESIS_HOME = pytest.StashKey[Path]()


FIXTURES = REPO_ROOT / "tests" / "fixtures"
"""Data the tests read, carried in the repository (see its README): a fresh clone tests with nothing beside it."""


def pytest_configure(config: pytest.Config) -> None:
    """Hypothesis also caches the constants it mines from source files under ./.hypothesis, already while test
    modules are collected: point it at a tmp dir of this run (removed at the end), so tests write nothing into the
    checkout."""
    home = Path(tempfile.mkdtemp(prefix="grove-extender-hypothesis-"))
    config.stash[_HYPOTHESIS_HOME] = home
    set_hypothesis_home_dir(home)


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(_HYPOTHESIS_HOME, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)
