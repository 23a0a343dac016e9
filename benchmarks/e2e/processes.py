"""What the bench reads of the processes it starts: CPU seconds and RSS from /proc, a free port, and a py-spy
sampler for where the CPU goes."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Sampler", "cpu_seconds", "free_port", "rss_bytes"]

_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Sampler:
    process: subprocess.Popen[bytes]
    output: Path

    @classmethod
    def start(cls, pid: int, output: Path) -> Sampler:
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        command = [spy, "record", "--pid", str(pid), "--rate", "50", "--format", "raw", "--threads",
                   "--nonblocking", "--output", str(output)]  # fmt: skip
        return cls(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), output)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)
