"""``bench_e2e --real --cprofile DIR``: the extender's main thread profiled by function over the drive, timed by that
thread's CPU clock (``benchmarks/e2e/cprofile_site/sitecustomize.py`` does the profiling inside ``serve``).

``environment`` is what the extender is started with; ``start`` and ``stop`` bracket the drive (SIGUSR1, SIGUSR2);
``summary`` reads the stats back as CPU milliseconds per bound pod, by function, own time first.
"""

from __future__ import annotations

import os
import pstats
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["SITE", "environment", "start", "stop", "summary"]

SITE = Path(__file__).parent / "cprofile_site"


@contextmanager
def environment(output: Path) -> Iterator[None]:
    """While inside, Python processes started from here (the extender) load the profiling hook and write to
    ``output``."""
    output.parent.mkdir(parents=True, exist_ok=True)
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", "GROVE_BENCH_CPROFILE")}
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE), saved["PYTHONPATH"]) if p)
    os.environ["GROVE_BENCH_CPROFILE"] = str(output)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def start(pid: int) -> None:
    os.kill(pid, signal.SIGUSR1)


def stop(pid: int, output: Path, *, timeout: float = 30.0) -> bool:
    """Ask for the stats and wait for the file; False if none came (the hook did not load)."""
    before = output.stat().st_mtime if output.exists() else None
    os.kill(pid, signal.SIGUSR2)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if output.exists() and output.stat().st_mtime != before:
            time.sleep(0.5)  # written in one go by the signal handler; let it finish
            return True
        time.sleep(0.2)
    return False


def summary(output: Path, pods: int, *, top: int = 25) -> str:
    """The functions with the most own CPU time, each with its own and its cumulative time per bound pod."""
    stats = pstats.Stats(str(output))
    rows = []
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(tottime for _, _, tottime, _, _ in entries.values())
    for (path, line, name), (_, calls, tottime, cumtime, _) in sorted(entries.items(), key=lambda kv: -kv[1][2])[:top]:
        where = f"{Path(path).parent.name}/{Path(path).name}:{line}" if path != "~" else "builtin"
        rows.append(
            f"  {1000 * tottime / pods:6.3f} own {1000 * cumtime / pods:7.3f} cumulative  {calls / pods:6.2f} calls"
            f"  {name} ({where})"
        )
    return f"  main thread, {1000 * total / pods:.2f} ms per bound pod under cProfile (ms per pod):\n" + "\n".join(rows)
