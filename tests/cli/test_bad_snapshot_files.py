"""Every malformed snapshot file, through every command that loads one: exit 2 and one line naming the item and
the field — no traceback, no hang, no running out of memory (each run under `ulimit -v 4000000`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scheduler.snapshot import SnapshotError, load_snapshot
from tests.cli.bad_files import COMMANDS, SNAPSHOT_LIMIT, write_corpus
from tests.conftest import REPO_ROOT


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, tuple[str, ...]], list[dict[str, Any]]]:
    directory = tmp_path_factory.mktemp("bad-files")
    expected = write_corpus(directory)
    done = subprocess.run(
        [sys.executable, "-m", "tests.cli.bad_files", str(directory)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "GROVE_EXTENDER_MAX_SNAPSHOT_BYTES": str(SNAPSHOT_LIMIT)},
        timeout=600,  # the whole corpus takes well under a minute: this only catches a hang
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return expected, [json.loads(line) for line in done.stdout.splitlines()]


def test_every_file_went_through_every_command(corpus: tuple[dict[str, tuple[str, ...]], list[dict[str, Any]]]) -> None:
    expected, runs = corpus
    assert len(expected) >= 35
    assert {(r["file"], r["command"]) for r in runs} == {(f, c) for f in expected for c in COMMANDS}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_bad_file_exits_2_with_one_line_naming_the_item_and_field(
    corpus: tuple[dict[str, tuple[str, ...]], list[dict[str, Any]]], command: str
) -> None:
    expected, runs = corpus
    wrong = []
    for run in (r for r in runs if r["command"] == command):
        needles = expected[run["file"]]
        lines = run["lines"]
        if run["code"] != 2 or len(lines) != 1 or not all(needle in lines[0] for needle in needles):
            wrong.append(f"{run['file']}: code {run['code']}, wanted {needles} in one line, got {lines}")
    assert wrong == []


def test_the_size_limit_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = tmp_path / "small.json"
    snapshot.write_text('{"kind": "List", "items": []}')  # 29 bytes
    monkeypatch.setenv("GROVE_EXTENDER_MAX_SNAPSHOT_BYTES", "28")
    with pytest.raises(SnapshotError, match="is 29 bytes, more than 28 bytes"):
        load_snapshot(snapshot)
    monkeypatch.setenv("GROVE_EXTENDER_MAX_SNAPSHOT_BYTES", "29")
    assert load_snapshot(snapshot).nodes == []
    monkeypatch.setenv("GROVE_EXTENDER_MAX_SNAPSHOT_BYTES", "a lot")
    with pytest.raises(SnapshotError, match="expected a positive number of bytes"):
        load_snapshot(snapshot)
