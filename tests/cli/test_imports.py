"""Each subcommand imports only what it runs: ``initc`` starts in every pod with a startup order, so it must not
pay for the planner, the HTTP stack or the reconciler that other subcommands bring in."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scheduler.cli import COMMANDS, build_parser

HEAVY = ("ortools", "fastapi", "uvicorn", "networkx", "scheduler.reconcile.controller", "placement")


def _imported_after(command: str) -> set[str]:
    """The heavy modules loaded once ``command``'s parser is built, in a fresh interpreter."""
    probe = (
        "import sys\n"
        "from scheduler.cli import build_parser\n"
        f"build_parser({command!r})\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(done.stdout.split())


@pytest.mark.parametrize("command", ["initc", "certs"])
def test_light_commands_import_nothing_heavy(command: str) -> None:
    assert _imported_after(command) == set()


def test_serve_still_brings_what_it_runs() -> None:
    """The probe can see heavy imports: ``serve`` needs the planner and FastAPI."""
    assert {"ortools", "fastapi"} <= _imported_after("serve")


def test_the_whole_help_lists_every_command() -> None:
    help_text = build_parser().format_help()
    assert all(name in help_text for name in COMMANDS)
    assert "bench" in help_text  # the benchmarks' entry point
