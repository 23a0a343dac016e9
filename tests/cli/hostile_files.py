"""Hostile files through every command that reads a file a user names, each command in a process of its own.

``python -m tests.cli.hostile_files DIRECTORY`` (run by ``tests/cli/test_hostile_files.py``) writes the hostile
inputs into DIRECTORY — ``/dev/zero`` (and a ``.csv`` link to it), a FIFO that a writer feeds zeros without end, a
3 GiB sparse file, and files of kinds the command does not read (a Secret, ``kind: 5``) — and runs every (command,
input) pair as a forked child under an address-space limit of ``MEMORY_LIMIT``, the way a user would run the
command: ``scheduler.cli.main`` with the command's arguments, stdout and stderr to files. Forking from one process
that imported the commands once keeps the whole matrix to seconds; each child is still its own process with its own
limit, killed if it outlives ``KILL_AFTER``. One JSON line per run: the exit code, what the command wrote to stderr,
its wall time and its peak resident memory.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from tests.conftest import REPO_ROOT

MEMORY_LIMIT = 1 << 30  # RLIMIT_AS of each command: 1 GiB, address space and therefore memory
KILL_AFTER = 30.0  # a run this long is killed; the test wants every run done within 10 s
GOOD_SNAPSHOT = REPO_ROOT / "benchmarks" / "snapshots" / "demo.json"

# Every command and option that reads a file, with ``{file}`` where the hostile file goes.
COMMANDS: dict[str, list[str]] = {
    "snapshot inspect": ["snapshot", "inspect", "{file}"],
    "snapshot inspect --levels": ["snapshot", "inspect", "{good}", "--levels", "{file}"],
    "plan --snapshot": ["plan", "--snapshot", "{file}", "--policy", "topology-greedy"],
    "plan --levels": ["plan", "--snapshot", "{good}", "--levels", "{file}", "--policy", "topology-greedy"],
    "serve --snapshot": ["serve", "--snapshot", "{file}", "--port", "0"],
    "serve --levels": ["serve", "--snapshot", "{good}", "--levels", "{file}", "--port", "0"],
    "serve --tls-cert": ["serve", "--snapshot", "{good}", "--port", "0", "--tls-cert", "{file}", "--tls-key", "{key}"],
    "serve --tls-key": ["serve", "--snapshot", "{good}", "--port", "0", "--tls-cert", "{cert}", "--tls-key", "{file}"],
    "serve --client-ca": [
        *("serve", "--snapshot", "{good}", "--port", "0"),
        *("--tls-cert", "{cert}", "--tls-key", "{key}", "--client-ca", "{file}"),
    ],
    "reconcile --dry-run -f": ["reconcile", "--dry-run", "-f", "{file}"],
    "bench --snapshot": ["bench", "--snapshot", "{file}", "--policy", "first-fit"],
    "bench --fill --shapes (snapshot)": [
        *("bench", "--fill", "--snapshot", "{good}", "--policy", "first-fit", "--seeds", "1"),
        *("--shapes", "{file}"),
    ],
    "bench --fill --shapes (csv)": [
        *("bench", "--fill", "--snapshot", "{good}", "--policy", "first-fit", "--seeds", "1"),
        *("--shapes", "{file}.csv"),
    ],
}
SPARSE_BYTES = 3 << 30


def write_inputs(directory: Path) -> dict[str, Path]:
    """The hostile inputs, by name; each also exists with a ``.csv`` suffix (the shapes option reads a pod list by
    its suffix)."""
    secret = {"kind": "List", "items": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}}]}
    five = {"kind": "List", "items": [{"kind": 5, "metadata": {"name": "five"}}]}
    inputs = {name: directory / name for name in ("dev-zero", "fifo", "sparse", "kind-secret", "kind-5")}
    for path in inputs.values():
        csv = path.with_name(path.name + ".csv")
        if path.name == "dev-zero":
            path.symlink_to("/dev/zero")  # the command sees /dev/zero through the link, as through /dev/stdin
            csv.symlink_to("/dev/zero")
        elif path.name == "fifo":
            os.mkfifo(path)
            os.mkfifo(csv)
        elif path.name == "sparse":
            for each in (path, csv):
                with each.open("wb") as out:
                    out.truncate(SPARSE_BYTES)  # holes: 3 GiB of zeros that take no disk
        else:
            text = json.dumps(secret if path.name == "kind-secret" else five)
            path.write_text(text)
            csv.write_text(text)
    return inputs


def _feed_zeros(fifo: Path) -> int:
    """A child that writes zeros into ``fifo`` until its reader goes away (or it is killed)."""
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        try:
            descriptor = os.open(fifo, os.O_WRONLY)
            zeros = bytes(1 << 16)
            while True:
                os.write(descriptor, zeros)
        finally:
            os._exit(0)
    return pid


def _child(argv: list[str], out: Path, err: Path) -> None:
    """In the forked child: the limit, the output files, the command; never returns."""
    code = 1
    try:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        for fd, path in ((1, out), (2, err)):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        from scheduler.cli import main

        code = main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 70
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run(argv: list[str], *, scratch: Path, feed: Path | None = None) -> dict[str, Any]:
    """Run one command in a forked child; its exit code, stderr lines, seconds and peak RSS in bytes."""
    out, err = scratch / "stdout", scratch / "stderr"
    writer = _feed_zeros(feed) if feed is not None else None
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(argv, out, err)
    killed = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - started > KILL_AFTER:
            os.kill(pid, signal.SIGKILL)
            killed = True
        time.sleep(0.005)
    seconds = time.monotonic() - started
    if writer is not None:
        os.kill(writer, signal.SIGKILL)
        os.waitpid(writer, 0)
    code: int | str = os.waitstatus_to_exitcode(status)
    if killed:
        code = "killed"
    lines = [line for line in err.read_text(errors="replace").splitlines() if line.strip()]
    return {
        "code": code,
        "lines": lines,
        "stdout": out.read_text(errors="replace")[:500],
        "seconds": round(seconds, 3),
        "max_rss": usage.ru_maxrss * 1024,  # Linux reports KiB
    }


def main(directory: str) -> None:
    root = Path(directory)
    inputs = write_inputs(root)
    scratch = root / "scratch"
    scratch.mkdir()
    from scheduler.cli import build_parser
    from scheduler.cli.certs import issue

    build_parser()  # imports every command, and bench's entry point, once for all the children
    pems = issue(server_names=["localhost"], days=1).write_pems(scratch)
    fill = {"good": str(GOOD_SNAPSHOT), "cert": str(pems["server_cert"]), "key": str(pems["server_key"])}
    for command, template in COMMANDS.items():
        for name, path in inputs.items():
            file = str(path)
            argv = [part.format(file=file, **fill) for part in template]
            fed = Path(next(part for part in argv if part.startswith(file))) if name == "fifo" else None
            result = run(argv, scratch=scratch, feed=fed)
            print(json.dumps({"command": command, "input": name, "file": file, **result}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
