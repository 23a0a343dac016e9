"""Shared test set-up: where the project's shared facts (recorded kube-scheduler requests, references) live."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps failing examples in ./.hypothesis by default; tests write only under their tmp dirs, and CI
# starts from a fresh clone where a saved example would never be replayed anyway.
settings.register_profile("grove-extender", database=None)
settings.load_profile("grove-extender")

REPO_ROOT = Path(__file__).resolve().parents[1]
_HYPOTHESIS_HOME = pytest.StashKey[Path]()


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
