"""The main-thread profiler the real benchmark starts the extender with (``bench_e2e --real --cprofile``): a Python
process given ``benchmarks/e2e/cprofile_site`` first on its PYTHONPATH profiles its main thread between SIGUSR1 and
SIGUSR2 and writes the stats, only when it runs ``serve`` with the file named; the summary reads them per pod."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from benchmarks.e2e import cprofile

WORKER = """
import sys, time
print("ready", flush=True)
def spin_the_main_thread():
    end = time.monotonic() + 60
    while time.monotonic() < end:
        sum(range(1000))
spin_the_main_thread()
"""


def _started(output: Path, *argv: str) -> subprocess.Popen[str]:
    with cprofile.environment(output):
        worker = subprocess.Popen(
            [sys.executable, "-", *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdin.write(WORKER)
    worker.stdin.close()
    assert worker.stdout.readline().strip() == "ready"
    return worker


def _end(worker: subprocess.Popen[str]) -> None:
    worker.kill()
    worker.wait()
    assert worker.stdout is not None
    worker.stdout.close()


def test_a_serve_process_profiles_its_main_thread_between_the_two_signals(tmp_path: Path) -> None:
    output = tmp_path / "main.prof"
    worker = _started(output, "serve")
    try:
        cprofile.start(worker.pid)
        time.sleep(0.5)
        assert cprofile.stop(worker.pid, output)
    finally:
        _end(worker)
    text = cprofile.summary(output, pods=10)
    assert "spin_the_main_thread" in text or "builtins.sum" in text, text
    assert text.startswith("  main thread, ")


def test_any_other_process_is_left_alone(tmp_path: Path) -> None:
    output = tmp_path / "main.prof"
    worker = _started(output, "reconcile")
    try:
        cprofile.start(worker.pid)  # with no hook, SIGUSR1 ends the process as by default
        time.sleep(0.3)
        assert not cprofile.stop(worker.pid, output, timeout=1.0)
    finally:
        _end(worker)
    assert not output.exists()
