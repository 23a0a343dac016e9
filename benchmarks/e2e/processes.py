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

__all__ = [
    "Sampler",
    "by_thread",
    "cpu_seconds",
    "free_port",
    "io_calls",
    "ms_per_pod",
    "rss_bytes",
    "thread_cpu",
    "thread_names",
    "thread_writes",
]

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_cpu(path: Path) -> float:
    fields = path.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads), from /proc/<pid>/stat."""
    return _stat_cpu(Path(f"/proc/{pid}/stat"))


def io_calls(pid: int) -> tuple[int, int]:
    """read()- and write()-family system calls of a process so far (all its threads; ``syscr``/``syscw`` of
    /proc/<pid>/io). uvloop's sockets read with read() and write with write()/writev(), so the event loops' traffic
    counts, as does the loop's own wake-up fd; recv()/send() (the watch threads' urllib3 sockets) do not. On these
    VMs a write that wakes another process costs ~0.1 ms, more than most of what the extender does per call."""
    fields = dict(line.split(": ", 1) for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(fields["syscr"]), int(fields["syscw"])


def thread_writes(pid: int) -> dict[int, float]:
    """``io_calls``' writes of each thread of a process, by native thread id (for ``by_thread``)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = dict(line.split(": ", 1) for line in (task / "io").read_text().splitlines())
            found[int(task.name)] = float(fields["syscw"])
        except (OSError, ValueError, KeyError):
            continue  # a thread that ended meanwhile
    return found


def thread_cpu(pid: int) -> dict[int, float]:
    """User + system CPU of each thread of a process, by native thread id."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found[int(task.name)] = _stat_cpu(task / "stat")
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile
    return found


def _py_spy() -> str:
    return shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")


def thread_names(pid: int) -> dict[int, str]:
    """Native thread id → Python thread name, from one ``py-spy dump`` (empty without py-spy). Pool threads are
    named by their pool (``asyncio_3`` → ``asyncio``)."""
    try:
        dump = subprocess.run([_py_spy(), "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    names = {}
    for line in dump.stdout.splitlines():
        if line.startswith("Thread ") and '"' in line:
            tid, name = line.split()[1], line.split('"')[1]
            names[int(tid, 0)] = name.rstrip("0123456789").rstrip("_") or name
    return names


def by_thread(before: dict[int, float], after: dict[int, float], names: dict[int, str]) -> dict[str, float]:
    """CPU each thread spent between two ``thread_cpu`` readings, summed by thread name (pool threads by pool)."""
    spent: dict[str, float] = {}
    for tid, seconds in after.items():
        name = names.get(tid, "threads gone or unnamed")
        spent[name] = spent.get(name, 0.0) + seconds - before.get(tid, 0.0)
    return spent


def ms_per_pod(cpu: dict[str, float], pods: int) -> str:
    """Each process's CPU seconds as milliseconds per bound pod, by name: ``etcd 1.42, extender 2.81``."""
    return ", ".join(f"{name} {1000 * seconds / max(pods, 1):.2f}" for name, seconds in sorted(cpu.items()))


def rss_bytes(pid: int, *, field: str = "VmRSS") -> int:
    """Resident memory now (``VmHWM``: its peak so far)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
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
        command = [_py_spy(), "record", "--pid", str(pid), "--rate", "100", "--format", "raw", "--threads", "--gil",
                   "--nonblocking", "--output", str(output)]  # fmt: skip
        return cls(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), output)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)
