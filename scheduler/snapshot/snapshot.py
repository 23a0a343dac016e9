"""Cluster snapshots: a Kubernetes ``List`` (JSON or YAML, optionally gzip) of Nodes, Pods, PodGangs and,
optionally, PriorityClasses, PodCliqueSets and a Grove ClusterTopologyBinding.

``kubectl get nodes,pods,podgangs -A -o json`` is a snapshot. Loading validates every item and fails on the first
bad one with its position, kind, name and the field at fault, because a snapshot that loads half-way would make
a replay or a plan silently wrong.

A snapshot is input from anyone (attached to an issue, hand-edited), so loading is bounded: at most
``MAX_SNAPSHOT_BYTES`` are read or decompressed, whatever the file is (``scheduler.snapshot.files``), the text goes
through the rules of ``scheduler.snapshot.documents`` (nesting, YAML aliases), the Grove objects, which keep fields we
do not model, may nest at most ``MAX_DEPTH`` deep, and an item of a kind a snapshot does not hold is refused.
"""

from __future__ import annotations

import gc
import gzip
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from api.core import Node, Pod, PriorityClass
from api.grove import ClusterTopologyBinding, PodCliqueSet, PodGang
from scheduler.snapshot.documents import UnreadableText, parse_text
from scheduler.snapshot.files import UnreadableFile, read_bounded

__all__ = [
    "DURATION_ANNOTATION",
    "MAX_DEPTH",
    "MAX_SNAPSHOT_BYTES",
    "Snapshot",
    "SnapshotError",
    "dump_snapshot",
    "gc_paused",
    "load_snapshot",
    "parse_snapshot",
]

MAX_SNAPSHOT_BYTES = 1 << 30
"""Largest snapshot read, after decompression, unless ``GROVE_EXTENDER_MAX_SNAPSHOT_BYTES`` says otherwise: 1 GiB
(a 10,000-node, 100,000-pod dump from ``record`` is a few hundred MB; a raw ``kubectl get -o json`` of such a
cluster can be more). Loading needs a multiple of the file's size in memory (``benchmarks/bench_snapshot_load.py``
reports the peak)."""
_LIMIT_VARIABLE = "GROVE_EXTENDER_MAX_SNAPSHOT_BYTES"

MAX_DEPTH = 64
"""Deepest nesting of a Grove object (a PodCliqueSet's pod template is about 15 deep)."""

DURATION_ANNOTATION = "grove-extender/duration-seconds"
"""A PodGang's run time in seconds, for replays (its arrival is ``metadata.creationTimestamp``)."""

_KINDS: dict[str, type[BaseModel]] = {
    "Node": Node,
    "Pod": Pod,
    "PodGang": PodGang,
    "PriorityClass": PriorityClass,
    "PodCliqueSet": PodCliqueSet,
    "ClusterTopologyBinding": ClusterTopologyBinding,
}


class SnapshotError(ValueError):
    """A snapshot that cannot be used; the message names the item and the field, on one line (the parsers' own
    messages span several, and every command prints it as one line to stderr)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


@dataclass
class Snapshot:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    podgangs: list[PodGang] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    podcliquesets: list[PodCliqueSet] = field(default_factory=list)
    topology_bindings: list[ClusterTopologyBinding] = field(default_factory=list)

    def node_names(self) -> set[str]:
        return {node.name for node in self.nodes}

    def priority_class(self, name: str) -> PriorityClass | None:
        """The snapshot's PriorityClass of that name (what a PodGang's ``priorityClassName`` means)."""
        return next((c for c in self.priority_classes if c.name == name), None)

    def default_priority_class(self) -> PriorityClass | None:
        """The snapshot's ``globalDefault`` class (of several, the lowest, as kube-apiserver's admission picks)."""
        defaults = [c for c in self.priority_classes if c.globalDefault]
        return min(defaults, key=lambda c: (c.value, c.name), default=None)


def _describe(index: int, item: Mapping[str, Any]) -> str:
    meta = item.get("metadata") or {}
    name = meta.get("name", "?") if isinstance(meta, Mapping) else "?"
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    where = f"{namespace}/{name}" if namespace else str(name)
    return f"items[{index}] ({item.get('kind', '?')} {where})"


def _field_path(error: ValidationError) -> str:
    first = error.errors()[0]
    path = ".".join(str(part) for part in first["loc"])
    return f"{path}: {first['msg']}"


def parse_snapshot(document: Any, *, consume: bool = False) -> Snapshot:
    """Build a snapshot from an already-decoded ``List`` document.

    ``consume`` drops each raw item once it is parsed, so a large dump's raw tree and its models are not both
    held at the peak (the loader owns its document; other callers keep theirs intact).
    """
    if not isinstance(document, Mapping) or not str(document.get("kind", "")).endswith("List"):
        kind = document.get("kind") if isinstance(document, Mapping) else type(document).__name__
        raise SnapshotError(f"snapshot: top level must be a Kubernetes List (kind: List), got {kind!r}")
    items = document.get("items")
    if not isinstance(items, list):
        raise SnapshotError("snapshot: 'items' must be a list")
    snapshot = Snapshot()
    buckets: dict[str, list[Any]] = {
        "Node": snapshot.nodes,
        "Pod": snapshot.pods,
        "PodGang": snapshot.podgangs,
        "PriorityClass": snapshot.priority_classes,
        "PodCliqueSet": snapshot.podcliquesets,
        "ClusterTopologyBinding": snapshot.topology_bindings,
    }
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise SnapshotError(f"snapshot: items[{index}] is not an object")
        kind = item.get("kind")
        if not kind:
            raise SnapshotError(f"snapshot: {_describe(index, item)} has no 'kind'")
        model = _KINDS.get(kind) if isinstance(kind, str) else None
        if model is None:
            # Refused, not skipped: a kind we do not read (a Secret, a typo, `kind: 5`) means the file is not what
            # its author thinks, and a plan that silently left it out would be wrong without saying so.
            raise SnapshotError(
                f"snapshot: {_describe(index, item)}: kind {kind!r} is not one a snapshot holds "
                f"(one of {', '.join(_KINDS)})"
            )
        if model in _KEEPS_UNKNOWN_FIELDS and (where := _too_deep(item)) is not None:
            raise SnapshotError(f"snapshot: {_describe(index, item)}: {where}: nested deeper than {MAX_DEPTH} levels")
        try:
            buckets[str(kind)].append(model.model_validate(item))
        except ValidationError as err:
            raise SnapshotError(f"snapshot: {_describe(index, item)}: {_field_path(err)}") from None
        if consume:
            items[index] = None
    _check_references(snapshot)
    return snapshot


# Node and Pod drop what they do not model; the Grove kinds keep it, so only their depth can reach later code.
_KEEPS_UNKNOWN_FIELDS = frozenset({PodGang, PodCliqueSet, ClusterTopologyBinding})


def _too_deep(item: Mapping[str, Any]) -> str | None:
    """The path of the first value nested deeper than ``MAX_DEPTH``, or ``None``; iterative, so it cannot recurse."""
    stack: list[tuple[Any, int, str]] = [(item, 0, "")]
    while stack:
        value, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            where = path.lstrip(".") or "item"
            return where if len(where) < 80 else where[:80] + "…"
        if isinstance(value, Mapping):
            stack.extend((child, depth + 1, f"{path}.{key}") for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, depth + 1, f"{path}[{i}]") for i, child in enumerate(value))
    return None


def _check_references(snapshot: Snapshot) -> None:
    names = snapshot.node_names()
    if len(names) != len(snapshot.nodes):
        seen: set[str] = set()
        for node in snapshot.nodes:
            if node.name in seen:
                raise SnapshotError(f"snapshot: Node {node.name}: metadata.name appears twice")
            seen.add(node.name)
    for pod in snapshot.pods:
        if pod.spec.nodeName and pod.spec.nodeName not in names:
            raise SnapshotError(
                f"snapshot: Pod {pod.key}: spec.nodeName {pod.spec.nodeName!r} is not a Node in the snapshot"
            )


def _decode(raw: bytes, source: str) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SnapshotError(f"snapshot {source}: not gzip, JSON or YAML text: {err}") from None
    try:
        return parse_text(text)
    except UnreadableText as err:
        raise SnapshotError(f"snapshot {source}: {err}") from None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many long-lived objects.

    Every few thousand allocations CPython rescans the young heap, and a decoded cluster dump is millions of
    young objects that all survive: with collection on, those rescans were most of loading a large snapshot
    (benchmarks/bench_snapshot_load.py; figures in docs/README.md). Nothing built here forms garbage cycles, so
    nothing is lost by waiting.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _limit() -> int:
    text = os.environ.get(_LIMIT_VARIABLE)
    if text is None:
        return MAX_SNAPSHOT_BYTES
    if not text.strip().isdigit() or int(text) <= 0:
        raise SnapshotError(f"{_LIMIT_VARIABLE}={text!r}: expected a positive number of bytes")
    return int(text)


def load_snapshot(path: str | Path, *, max_bytes: int | None = None) -> Snapshot:
    """Read a snapshot file; gzip is recognised by its magic bytes, YAML vs JSON by the first character.

    Reads at most ``max_bytes`` (default ``MAX_SNAPSHOT_BYTES``) after decompression; anything wrong with the file,
    including running out of memory on it, is a ``SnapshotError``.
    """
    source = str(path)
    limit = _limit() if max_bytes is None else max_bytes
    try:
        raw = read_bounded(path, limit=limit, gunzip=True, hint=f"{_LIMIT_VARIABLE} raises the limit")
    except UnreadableFile as err:
        raise SnapshotError(f"snapshot {source}: {err}") from None
    except MemoryError:
        raise SnapshotError(f"snapshot {source}: does not fit in this process's memory") from None
    try:
        with gc_paused():
            document = _decode(raw, source)
            del raw  # the file's bytes are dead weight at the peak
            return parse_snapshot(document, consume=True)
    except MemoryError:
        raise SnapshotError(f"snapshot {source}: does not fit in this process's memory") from None
    except SnapshotError as err:  # parse_snapshot's message names the item; this one names the file too
        raise SnapshotError(f"snapshot {source}: {str(err).removeprefix('snapshot: ')}") from None


def dump_snapshot(items: Iterable[Mapping[str, Any]], path: str | Path) -> None:
    """Write raw items as a ``List``; JSON, gzip-compressed when the name ends in ``.gz``, YAML for ``.yaml``."""
    document = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": list(items)}
    target = Path(path)
    suffixes = target.suffixes
    if ".yaml" in suffixes or ".yml" in suffixes:
        data = yaml.safe_dump(document, sort_keys=False).encode()
    else:
        data = json.dumps(document, indent=None if ".gz" in suffixes else 1).encode()
    if suffixes and suffixes[-1] == ".gz":
        data = gzip.compress(data, mtime=0)
    target.write_bytes(data)
