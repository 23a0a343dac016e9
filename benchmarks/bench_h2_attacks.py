"""What a legitimate client waits while a client holding a valid certificate attacks ``serve`` over HTTP/2 and mTLS.

Starts ``grove-extender serve`` on the demo snapshot behind mTLS (certificates issued here for ``localhost``), keeps
a legitimate HTTP/2 client calling filter every 50 ms, measures a quiet spell first, then runs each attack of
``benchmarks/h2_attacks.py`` in turn and prints, per attack: the legitimate calls' p50 and p99 during it, the slowest
in the second after it, how much the server's RSS grew, and how the attacker's connections ended. The bounds are held
by ``tests/api/http/test_http2_attacks.py``; this prints the figures, with the machine's load.

    .venv/bin/python -m benchmarks.bench_h2_attacks [--seconds 10] [--attack rapid_reset ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from benchmarks.e2e.processes import free_port
from benchmarks.h2_attacks import ATTACKS, Attacked, Certificates, Legitimate, Outcome, measure
from scheduler.cli.certs import issue

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "benchmarks" / "snapshots" / "demo.json"
FILTER = (ROOT / "deploy" / "requests" / "filter-demo.json").read_bytes()


@dataclass(frozen=True)
class Served:
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    scheduler: Certificates  # the client certificate kube-scheduler would hold

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def serving(folder: Path, *extra: str, patience: float = 60.0) -> Iterator[Served]:
    """``serve`` on the demo snapshot behind mTLS, in ``folder``, until the block ends."""
    pems = issue(server_names=["localhost"], days=1).write_pems(folder)
    port, probe_port = free_port(), free_port()
    log = folder / "serve.log"
    command = [
        str(Path(sys.executable).with_name("grove-extender")),
        "serve",
        "--snapshot",
        str(DEMO),
        "--port",
        str(port),
        "--probe-port",
        str(probe_port),
        "--tls-cert",
        str(pems["server_cert"]),
        "--tls-key",
        str(pems["server_key"]),
        "--client-ca",
        str(pems["ca"]),
        *extra,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    served = Served(process, port, log, Certificates(pems["ca"], pems["client_cert"], pems["client_key"]))
    try:
        deadline = time.monotonic() + patience
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{probe_port}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve did not become ready:\n{served.log_text()}")
            time.sleep(0.1)
        yield served
    finally:
        process.terminate()
        try:
            process.wait(timeout=patience)
        except subprocess.TimeoutExpired:
            process.kill()


def quiet(legitimate: Legitimate, seconds: float) -> Outcome:
    """The same figures with no attack: the baseline of this run."""
    start = time.monotonic()
    time.sleep(seconds)
    end = time.monotonic()
    return Outcome("(no attack)", Attacked(), legitimate.between(start, end), [], 0, 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_h2_attacks", description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0, help="each attack's length")
    parser.add_argument("--attack", action="append", choices=ATTACKS, help="only these (repeatable)")
    args = parser.parse_args(argv)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory() as tmp, serving(Path(tmp), "--request-timeout", "2") as served:
        legitimate = Legitimate(f"https://localhost:{served.port}", served.scheduler, FILTER).start()
        try:
            print(quiet(legitimate, args.seconds).line(), flush=True)
            for kind in args.attack or ATTACKS:
                outcome = measure(
                    kind,
                    port=served.port,
                    pid=served.process.pid,
                    certificates=served.scheduler,
                    seconds=args.seconds,
                    legitimate=legitimate,
                )
                alive = "" if served.process.poll() is None else "  SERVER DIED"
                print(outcome.line() + alive, flush=True)
        finally:
            legitimate.stop()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
