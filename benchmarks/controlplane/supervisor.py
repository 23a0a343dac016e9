"""The processes a control plane starts: each with its own log file, each stopped by its PID.

Every child also gets the parent-death signal SIGKILL (Linux ``prctl``), so a test run that is itself killed leaves
no etcd, API server or extender behind on a machine others share.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Child", "Supervisor"]

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # Not Linux: no prctl; the supervisor's atexit hook and the tests' finalizers still stop the child.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class Child:
    """One started process. ``log`` holds its stdout and stderr."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, *, kill: bool = False, grace: float = 10.0) -> int | None:
        """SIGTERM (or SIGKILL with ``kill``), then SIGKILL after ``grace`` seconds; returns the exit code."""
        if self.process.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL if kill else signal.SIGTERM)
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
            except ProcessLookupError:
                pass
        return self.process.returncode

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""


class Supervisor:
    """Starts children into ``folder`` (logs named after them) and stops every one still running, newest first."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.children: list[Child] = []
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        atexit.register(self.stop_all)

    def start(
        self,
        name: str,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Child:
        """Start ``command``; its output goes to ``<folder>/<name>.log`` (``<name>.2.log`` for a restart)."""
        with self._lock:
            count = self._counts[name] = self._counts.get(name, 0) + 1
        path = self.folder / (f"{name}.log" if count == 1 else f"{name}.{count}.log")
        with path.open("wb") as out:
            process = subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                preexec_fn=_die_with_parent,
            )
        child = Child(name, process, path)
        with self._lock:
            self.children.append(child)
        log.info("started %s pid=%d log=%s", name, child.pid, path)
        return child

    def stop_all(self) -> None:
        with self._lock:
            children, self.children = list(reversed(self.children)), []
        for child in children:
            # Nothing here needs a graceful end, and kube-apiserver takes long to stop on SIGTERM.
            child.stop(kill=True)
        atexit.unregister(self.stop_all)
