"""Where the extender's CPU went: py-spy's collapsed stacks (``--format raw``) summed into the parts the issue
names. The markers are module paths and qualified names of today's code: the watches are
``scheduler/kube/informer.py`` with the decoders of ``scheduler/kube/decoding.py``, fed by ``scheduler/kube/mirror.py``.
A sample counts toward the first category whose marker appears in its stack, checked in the order below
(most specific first), so each sample is counted once.

    .venv/bin/python -m benchmarks.e2e.profile /tmp/prof/extender.txt
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

__all__ = ["CATEGORIES", "breakdown"]

CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("planning (solve)", ("placement/solve.py", "placement/batch/")),
    ("planning (members, view, topology)", ("Planner.plan", "HeadPlanner.", "TopologyCache")),
    ("watch: JSON decode", ("scheduler/kube/informer.py", "json/decoder.py")),
    ("watch: model decode", ("Decoder.change", "Decoder.page", "Decoder.parse")),
    ("watch: store + listeners", ("ClusterStore.apply", "ClusterStore.replace")),
    ("watch: HTTP read", ("Informer.",)),
    ("TLS handshakes (server side)", ("HandshakeGate.", "do_handshake")),
    ("bind: writer (pods/binding over aiohttp)", ("KubeClusterWriter.bind",)),
    ("status + Event writes", ("patch_podgang_status", "record_event", "PodGangStatusReporter.")),
    ("verbs: body decode", ("BodyDecoder.decode",)),
    ("filter: decision", ("Coordinator.filter",)),
    ("bind: ready members and the release", ("Coordinator.bind", "Binder.", "Releaser.")),
    ("HTTP server (uvicorn, httptools)", ("uvicorn/", "starlette/", "fastapi/", "httptools")),
    ("lease, background worker", ("LeaseElector", "BackgroundWorker")),
)


def _category(stack: str) -> str:
    for name, markers in CATEGORIES:
        if (
            all(marker in stack for marker in markers)
            if name == "watch: JSON decode"
            else any(m in stack for m in markers)
        ):
            return name
    return "other (event loop, GC, idle threads)"


def breakdown(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            counts[_category(stack)] += int(count)
    return counts


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    counts = breakdown(Path(args[0]))
    total = sum(counts.values()) or 1
    for name, count in counts.most_common():
        print(f"{100 * count / total:5.1f}%  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
