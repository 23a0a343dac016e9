"""The real kubectl, as a user runs it against the control plane."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Kubectl", "KubectlError"]


class KubectlError(RuntimeError):
    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        super().__init__(f"kubectl {' '.join(args)} exited {returncode}: {stderr.strip()}")
        self.stderr = stderr


@dataclass(frozen=True)
class Kubectl:
    binary: str
    kubeconfig: Path

    def __call__(self, *args: str, stdin: str | None = None, timeout: float = 120) -> str:
        """Run ``kubectl ARGS``; its stdout, or ``KubectlError`` with its stderr."""
        command = [self.binary, f"--kubeconfig={self.kubeconfig}", *args]
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise KubectlError(list(args), done.returncode, done.stderr)
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "-o", "json"))
