"""Shared test set-up: where the project's shared facts (recorded kube-scheduler requests, references) live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis everywhere: no per-example deadline (a loaded 2-core machine makes any deadline a coin toss). On CI
# (``CI=true``) examples are derived from each test, not drawn at random, so a failure there reproduces exactly, and
# the database is off so nothing carries over between runs. Tests' own ``max_examples`` stay modest.
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "ci", deadline=None, derandomize=True, database=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI", "").lower() == "true" else "dev")

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """The ``shared/`` folder that sits beside the repository.

    CI clones main into a folder with a copy of ``shared/`` beside it (``<repo>/../shared``); developers' git
    worktrees sit one level deeper (``<root>/wt/<name>``), so the nearest ancestor holding ``shared/`` wins.
    Missing is an error, not a skip: tests that silently skip their fixtures prove nothing.
    """
    for parent in REPO_ROOT.parents:
        candidate = parent / "shared"
        if (candidate / "fixtures").is_dir():
            return candidate
    raise RuntimeError(
        f"tests need the shared/ folder beside the repository ({REPO_ROOT.parent / 'shared'}); it was not found"
    )


@pytest.fixture(scope="session")
def shared() -> Path:
    return shared_dir()
