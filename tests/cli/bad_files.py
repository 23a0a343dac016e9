"""A corpus of malformed snapshot files, and a driver that runs every command that loads one over each of them.

``write_corpus(directory)`` writes the files and returns what each one's error must name. ``python -m
tests.cli.bad_files DIRECTORY`` (run by ``tests/cli/test_bad_snapshot_files.py`` in a child process under an
address-space limit) runs ``snapshot inspect``, ``plan``, ``serve --snapshot`` and ``bench`` on every file
in-process, capturing each command's stderr, and prints one JSON line per (file, command): the exit code and the
lines written.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import resource
import sys
import zlib
from pathlib import Path
from typing import Any

from api.grove import MAX_GROUP_PODS

COMMANDS = {
    "inspect": ["snapshot", "inspect", "{file}"],
    "plan": ["plan", "--snapshot", "{file}", "--policy", "topology-greedy"],
    "serve": ["serve", "--snapshot", "{file}"],
    "bench": ["bench", "--snapshot", "{file}", "--policy", "first-fit"],
}
ADDRESS_SPACE_LIMIT = 4_000_000 * 1024  # `ulimit -v 4000000`, as the runs
SNAPSHOT_LIMIT = 256 * 1024 * 1024  # GROVE_EXTENDER_MAX_SNAPSHOT_BYTES for the driver: the bomb below exceeds it


def _node(name: str = "n0", **allocatable: Any) -> dict[str, Any]:
    quantities = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8", **allocatable}
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": quantities}}


def _pod(name: str = "p0", *, node: str = "", **requests: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"grove.io/podgang": "g"}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", **requests}}}]},
    }


def _gang(min_replicas: Any = 1, pods: int = 1) -> dict[str, Any]:
    refs = [{"namespace": "default", "name": f"p{i}"} for i in range(pods)]
    return {
        "kind": "PodGang",
        "metadata": {"name": "g", "namespace": "default", "creationTimestamp": "2026-11-25T00:00:00Z"},
        "spec": {"podgroups": [{"name": "w", "podReferences": refs, "minReplicas": min_replicas}]},
    }


def _listed(*items: Any) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}).encode()


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"x": value}
    return value


def _bomb(members: int) -> bytes:
    # Concatenated gzip members decompress to the concatenation: 16 MiB of spaces each (text, so only the limit
    # stops it; zeros stop at the first NUL byte), ~16 KB on disk each.
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    one = member.compress(b" " * (16 << 20)) + member.flush()
    return one * members


def write_corpus(directory: Path) -> dict[str, tuple[str, ...]]:
    """Write the malformed files; map each file name to the substrings its one error line must contain."""
    deep_gang = _gang()
    deep_gang["spec"]["extension"] = _nested(200)  # kept by the Grove model: beyond MAX_DEPTH, within recursion
    files: dict[str, tuple[bytes, tuple[str, ...]]] = {
        # the decoders' limits
        "deep.json": (b'{"kind": "List", "items": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", ("nested too deeply",)),
        "deep.yaml": (b"kind: List\nitems:\n- " + b"[" * 5_000 + b"]" * 5_000 + b"\n", ("nested too deeply",)),
        "deep-podgang.json": (_listed(deep_gang), ("items[0] (PodGang default/g)", "spec.extension", "64 levels")),
        "bomb.json.gz": (_bomb(20), ("decompresses to more than", "GROVE_EXTENDER_MAX_SNAPSHOT_BYTES")),
        "truncated.json.gz": (gzip.compress(_listed(_node()))[:40], ("not valid gzip",)),
        "gzip-garbage.gz": (b"\x1f\x8b" + bytes(range(256)) * 4, ("not valid gzip",)),
        "not-utf8.json": (b'{"kind": "List", "items": ["\xff\xfe\xfa"]}', ("not gzip, JSON or YAML", "utf-8")),
        "billion-laughs.yaml": (  # nine levels of nine: 9^9 ≈ 387 million nodes from under 300 bytes
            b"kind: List\na: &a [x, x, x, x, x, x, x, x, x]\n"
            + b"".join(b"%c: &%c [" % (c, c) + b", ".join([b"*%c" % (c - 1)] * 9) + b"]\n" for c in b"bcdefgh")
            + b"items: [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n",
            ("aliases expand to more than", "not allowed"),
        ),
        "long-integer.json": (
            b'{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n0"}, "status": {"allocatable": '
            b'{"cpu": ' + b"9" * 5_000 + b"}}}]}",
            ("not valid JSON or YAML",),
        ),
        "syntax.yaml": (b"kind: List\nitems:\n  - kind: Node\n   metadata: {name: [}\n", ("not valid JSON or YAML",)),
        "trailing.json": (_listed(_node()) + b" }", ("not valid JSON or YAML",)),
        "empty.json": (b"", ("top level must be a Kubernetes List",)),
        "top-level-array.json": (b"[1, 2]", ("top level must be a Kubernetes List",)),
        "items-not-a-list.json": (b'{"kind": "List", "items": 5}', ("'items' must be a list",)),
        "item-not-an-object.json": (_listed(5), ("items[0] is not an object",)),
        "no-kind.json": (_listed({"metadata": {"name": "n0"}}), ("items[0]", "has no 'kind'")),
        # quantities a kubelet, a device plugin or a hand could write
        "gpu-1e40.json": (_listed(_node(**{"nvidia.com/gpu": "1e40"})), ("items[0] (Node n0)", "nvidia.com/gpu")),
        "gpu-1e40.yaml": (
            b"kind: List\nitems:\n- kind: Node\n  metadata: {name: n0}\n  status:\n"
            b"    allocatable: {nvidia.com/gpu: 1e40}\n",
            ("items[0] (Node n0)", "status.allocatable", "nvidia.com/gpu"),
        ),
        "gpu-5000.json": (_listed(_node(**{"nvidia.com/gpu": "5000"})), ("items[0] (Node n0)", "sane maximum")),
        "memory-9Ei.json": (_listed(_node(memory="9Ei")), ("items[0] (Node n0)", "memory", "64-bit")),
        "negative-allocatable.json": (_listed(_node(cpu="-4")), ("items[0] (Node n0)", "cpu", "negative")),
        "exponent.json": (_listed(_node(cpu="1e999999999")), ("items[0] (Node n0)", "cpu", "exponent")),
        "nan.json": (
            b'{"kind":"List","items":[{"kind":"Node","metadata":{"name":"n0"},"status":{"allocatable":{"cpu": NaN}}}]}',
            ("items[0] (Node n0)", "cpu", "finite"),
        ),
        "cpu-20-digits.json": (
            _listed(_node(), _pod(cpu="12345678901234567890")),
            ("items[1] (Pod default/p0)", "spec.containers.0.resources.requests", "cpu"),
        ),
        "negative-request.json": (
            _listed(_node(), _pod(**{"nvidia.com/gpu": "-4"})),
            ("items[1] (Pod default/p0)", "nvidia.com/gpu", "negative"),
        ),
        "not-a-quantity.json": (_listed(_node(), _pod(cpu="4x")), ("items[1] (Pod default/p0)", "cpu", "4x")),
        # counts and shapes
        "min-replicas-1e9.json": (
            _listed(_node(), _pod(), _gang(min_replicas=10**9)),
            ("items[2] (PodGang default/g)", "minReplicas", str(MAX_GROUP_PODS)),
        ),
        "min-replicas-true.json": (_listed(_node(), _pod(), _gang(min_replicas=True)), ("items[2]", "minReplicas")),
        "min-replicas-negative.json": (_listed(_node(), _pod(), _gang(min_replicas=-1)), ("items[2]", "minReplicas")),
        "too-many-references.json": (
            _listed(_node(), _gang(pods=MAX_GROUP_PODS + 1)),
            ("items[1] (PodGang default/g)", "podReferences"),
        ),
        "metadata-null.json": (_listed({"kind": "Node", "metadata": None}), ("items[0] (Node ?)", "metadata")),
        "labels-a-list.json": (_listed({"kind": "Node", "metadata": {"name": "n0", "labels": ["a"]}}), ("labels",)),
        "gang-without-spec.json": (_listed({"kind": "PodGang", "metadata": {"name": "g"}}), ("items[0]", "spec")),
        "bad-timestamp.json": (
            _listed({**_gang(), "metadata": {"name": "g", "creationTimestamp": "yesterday"}}),
            ("items[0] (PodGang g)", "creationTimestamp"),
        ),
        "bad-taint.json": (
            _listed({**_node(), "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}}),
            ("items[0] (Node n0)", "spec.taints.0.effect"),
        ),
        "unknown-node.json": (_listed(_node(), _pod(node="elsewhere")), ("Pod default/p0", "spec.nodeName")),
        "duplicate-node.json": (_listed(_node(), _node()), ("Node n0", "appears twice")),
    }
    expected = {}
    for name, (content, needles) in files.items():
        (directory / name).write_bytes(content)
        expected[name] = needles
    (directory / "a-directory.json").mkdir()
    expected["a-directory.json"] = ("is a directory",)
    return expected


def _run(argv: list[str]) -> dict[str, Any]:
    from scheduler.cli import main

    captured = io.StringIO()
    with contextlib.redirect_stderr(captured), contextlib.redirect_stdout(io.StringIO()):
        try:
            code: Any = main(argv)
        except BaseException as err:  # what the test must never see: record it, keep going
            code = f"raised {type(err).__name__}: {err}"
    return {"code": code, "lines": [line for line in captured.getvalue().splitlines() if line.strip()]}


def main(directory: str) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))
    for path in sorted(Path(directory).iterdir()):
        for command, template in COMMANDS.items():
            argv = [part.replace("{file}", str(path)) for part in template]
            print(json.dumps({"file": path.name, "command": command, **_run(argv)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
