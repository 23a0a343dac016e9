"""Where a process's CPU goes, counted by the kernel: ``perf record -e cpu-clock`` of one process, read back per
thread and per shared object (the interpreter, the kernel, libc, OpenSSL, uvloop, pydantic-core).

py-spy says which Python function a thread is in, but on a machine whose cores are full it also counts a thread that
holds the GIL while it waits for a core (after a write that woke another process, say) as busy there. ``cpu-clock``
samples a thread only while it runs, so the two together tell Python work from waiting. Needs ``perf`` on the PATH
and ``kernel.perf_event_paranoid`` ≤ 2 for a process of the same user; without it there is no such line, and the
run goes on.

    .venv/bin/python -m benchmarks.e2e.perf DIR/extender-drive.perf.data
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PerfRecord", "by_object", "by_thread", "parse_script", "samples", "summary"]

_LINE = re.compile(r"^\s*(\d+)\s+[0-9a-f]+\s+\((.*)\)\s*$")


@dataclass
class PerfRecord:
    process: subprocess.Popen[bytes]
    output: Path

    @classmethod
    def start(cls, pid: int, output: Path) -> PerfRecord | None:
        perf = shutil.which("perf")
        if perf is None:
            return None
        output.parent.mkdir(parents=True, exist_ok=True)
        command = [perf, "record", "-e", "cpu-clock", "-F", "499", "-p", str(pid), "-o", str(output)]
        return cls(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), output)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def samples(path: Path) -> Counter[tuple[int, str]]:
    """perf's samples of the record at ``path``, counted by (native thread id, shared object)."""
    done = subprocess.run(
        ["perf", "script", "-i", str(path), "-F", "tid,ip,dso"], capture_output=True, text=True, timeout=300
    )
    return parse_script(done.stdout)


def parse_script(text: str) -> Counter[tuple[int, str]]:
    """``perf script -F tid,ip,dso`` lines (``  1450  7f15a08fd93f (/usr/lib/libpython3.11.so.1.0)``) counted."""
    found: Counter[tuple[int, str]] = Counter()
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            found[int(match[1]), _short(match[2])] += 1
    return found


def by_thread(counted: Counter[tuple[int, str]]) -> dict[int, float]:
    """Each thread's share of all the samples, in percent, by native thread id."""
    total = sum(counted.values()) or 1
    threads: Counter[int] = Counter()
    for (tid, _), n in counted.items():
        threads[tid] += n
    return {tid: 100 * n / total for tid, n in threads.most_common()}


def by_object(counted: Counter[tuple[int, str]], tid: int) -> dict[str, float]:
    """One thread's samples by shared object, in percent of that thread's."""
    mine = Counter({name: n for (t, name), n in counted.items() if t == tid})
    total = sum(mine.values()) or 1
    return {name: 100 * n / total for name, n in mine.most_common()}


def _short(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if name.startswith("[kernel"):
        return "kernel"
    return name.split(".cpython-", 1)[0].split(".so", 1)[0].removeprefix("lib")


def summary(path: Path, names: Mapping[int, str], *, threads: int = 3, objects: int = 6) -> str:
    """The busiest threads, each with its share of the samples and its own split by shared object."""
    counted = samples(path)
    lines = []
    for tid, share in list(by_thread(counted).items())[:threads]:
        split = ", ".join(
            f"{name} {part:.0f}%" for name, part in list(by_object(counted, tid).items())[:objects] if part >= 0.5
        )
        lines.append(f"  {names.get(tid, str(tid))} {share:.0f}% of the samples: {split}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m benchmarks.e2e.perf PERF.DATA", file=sys.stderr)
        return 2
    print(summary(Path(args[0]), {}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
