"""Where a Go process's CPU went: a CPU profile from its ``/debug/pprof/profile`` endpoint, summed by function.

kube-scheduler serves pprof on its secure port (``enableProfiling`` is on by default), to callers the API server
authorizes for ``/debug/*``. The profile is gzipped protobuf (``profile.proto`` of github.com/google/pprof); the
few fields read here are decoded by hand, so no Go toolchain is needed to read one:

    .venv/bin/python -m benchmarks.e2e.pprof PROFILE.pb.gz [--top 40]

``summary`` gives each function's flat share (samples whose innermost frame it is) and cumulative share (samples
with it anywhere on the stack), so "how much of kube-scheduler's CPU went to calling the extender" is one line.
"""

from __future__ import annotations

import argparse
import gzip
import ssl
import sys
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ACTIVITIES", "Profile", "by_activity", "fetch", "parse"]


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of one protobuf message: an int for varints, bytes for length-delimited fields."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            yield number, value
        elif wire == 2:
            size, at = _varint(data, at)
            yield number, data[at : at + size]
            at += size
        elif wire == 1:
            yield number, int.from_bytes(data[at : at + 8], "little")
            at += 8
        elif wire == 5:
            yield number, int.from_bytes(data[at : at + 4], "little")
            at += 4
        else:
            raise ValueError(f"pprof: unsupported wire type {wire}")


def _ints(value: int | bytes) -> list[int]:
    """A repeated integer field: packed (bytes) or one varint."""
    if isinstance(value, int):
        return [value]
    found, at = [], 0
    while at < len(value):
        number, at = _varint(value, at)
        found.append(number)
    return found


@dataclass
class Profile:
    """Samples as stacks of function names (innermost first) with their CPU nanoseconds."""

    samples: list[tuple[tuple[str, ...], int]]

    @property
    def total(self) -> int:
        return sum(value for _, value in self.samples)

    def flat(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for stack, value in self.samples:
            if stack:
                counts[stack[0]] += value
        return counts

    def cumulative(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for stack, value in self.samples:
            for name in set(stack):
                counts[name] += value
        return counts


ACTIVITIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("TLS handshakes", ("crypto/tls.(*Conn).HandshakeContext",)),
    ("extender calls", ("(*HTTPExtender).", "net/http.(*persistConn).")),
    ("in-tree filters", ("RunFilterPlugins",)),
    ("scoring", ("RunScorePlugins", "prioritizeNodes")),
    ("binding cycle", ("bindingCycle",)),
    ("scheduling cycle, queue", ("ScheduleOne",)),
    ("informers", ("k8s.io/client-go/tools/cache.",)),
    ("garbage collection", ("runtime.gcBgMarkWorker",)),
)
"""kube-scheduler's CPU by what it was doing: a sample counts toward the first activity one of whose markers is on
its stack. Filter plugins run in goroutines of their own (``ParallelizeUntil``), so they are not under
``ScheduleOne`` in a profile."""


def by_activity(profile: Profile) -> dict[str, float]:
    """Each activity's share of the profile's CPU (``ACTIVITIES``; ``other`` for the rest), largest first."""
    totals: Counter[str] = Counter()
    for stack, value in profile.samples:
        name = next((n for n, marks in ACTIVITIES if any(m in f for f in stack for m in marks)), "other")
        totals[name] += value
    whole = sum(totals.values()) or 1
    return {name: value / whole for name, value in totals.most_common()}


def parse(data: bytes) -> Profile:
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    strings: list[str] = []
    functions: dict[int, int] = {}  # function id → name's string index
    locations: dict[int, list[int]] = {}  # location id → function ids, innermost (inlined) first
    raw: list[tuple[list[int], int]] = []
    for number, value in _fields(data):
        if number == 6 and isinstance(value, bytes):
            strings.append(value.decode(errors="replace"))
        elif number == 5 and isinstance(value, bytes):
            fields = dict(_fields(value))
            functions[int(fields.get(1, 0))] = int(fields.get(2, 0))
        elif number == 4 and isinstance(value, bytes):
            ident, lines = 0, []
            for field, item in _fields(value):
                if field == 1:
                    ident = int(item)
                elif field == 4 and isinstance(item, bytes):
                    lines.append(int(dict(_fields(item)).get(1, 0)))
            locations[ident] = lines
        elif number == 2 and isinstance(value, bytes):
            ids: list[int] = []
            values: list[int] = []
            for field, item in _fields(value):
                if field == 1:
                    ids.extend(_ints(item))
                elif field == 2:
                    values.extend(_ints(item))
            raw.append((ids, values[-1] if values else 0))  # CPU profiles: [samples, nanoseconds]
    samples = []
    for ids, value in raw:
        stack = tuple(strings[functions.get(f, 0)] for loc in ids for f in locations.get(loc, ()))
        samples.append((stack, value))
    return Profile(samples)


def fetch(url: str, *, token: str, seconds: float) -> bytes:
    """``GET url/debug/pprof/profile?seconds=N`` with a bearer token; the server's certificate is not checked
    (kube-scheduler's secure port serves a self-signed one)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    request = urllib.request.Request(
        f"{url}/debug/pprof/profile?seconds={int(seconds)}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=seconds + 60, context=context) as reply:
        return bytes(reply.read())


def summary(profile: Profile, *, top: int = 30) -> str:
    total = profile.total or 1
    flat, cumulative = profile.flat(), profile.cumulative()
    lines = [f"{total / 1e9:.2f} s of CPU sampled", "  cum%  flat%  function"]
    for name, value in cumulative.most_common(top):
        lines.append(f"{100 * value / total:6.1f} {100 * flat.get(name, 0) / total:6.1f}  {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--match", help="only functions whose name contains this")
    args = parser.parse_args(argv)
    profile = parse(Path(args.profile).read_bytes())
    if args.match:
        total = profile.total or 1
        for name, value in profile.cumulative().most_common():
            if args.match in name:
                print(f"{100 * value / total:6.1f}  {name}")
        return 0
    print(summary(profile, top=args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
