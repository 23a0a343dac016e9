"""Cluster snapshots: a Kubernetes ``List`` (JSON or YAML, optionally gzip) of Nodes, Pods, PodGangs and,
optionally, PodCliqueSets and a Grove ClusterTopologyBinding.

``kubectl get nodes,pods,podgangs -A -o json`` is a snapshot. Loading validates every item and fails on the first
bad one with its position, kind, name and the field at fault, because a snapshot that loads half-way would make
a replay or a plan silently wrong.
"""

from __future__ import annotations

import gc
import gzip
import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from api.grove import ClusterTopologyBinding, PodCliqueSet, PodGang
from api.kube import Node, Pod

__all__ = ["Snapshot", "SnapshotError", "dump_snapshot", "gc_paused", "load_snapshot", "parse_snapshot"]

_KINDS: dict[str, type[BaseModel]] = {
    "Node": Node,
    "Pod": Pod,
    "PodGang": PodGang,
    "PodCliqueSet": PodCliqueSet,
    "ClusterTopologyBinding": ClusterTopologyBinding,
}


class SnapshotError(ValueError):
    """A snapshot that cannot be used; the message names the item and the field."""


@dataclass
class Snapshot:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    podgangs: list[PodGang] = field(default_factory=list)
    podcliquesets: list[PodCliqueSet] = field(default_factory=list)
    topology_bindings: list[ClusterTopologyBinding] = field(default_factory=list)
    ignored_kinds: dict[str, int] = field(default_factory=dict)  # kinds we do not model, counted not dropped silently

    def node_names(self) -> set[str]:
        return {node.name for node in self.nodes}


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
        "PodCliqueSet": snapshot.podcliquesets,
        "ClusterTopologyBinding": snapshot.topology_bindings,
    }
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise SnapshotError(f"snapshot: items[{index}] is not an object")
        kind = item.get("kind")
        if not kind:
            raise SnapshotError(f"snapshot: {_describe(index, item)} has no 'kind'")
        model = _KINDS.get(str(kind))
        if model is None:
            snapshot.ignored_kinds[str(kind)] = snapshot.ignored_kinds.get(str(kind), 0) + 1
            continue
        try:
            buckets[str(kind)].append(model.model_validate(item))
        except ValidationError as err:
            raise SnapshotError(f"snapshot: {_describe(index, item)}: {_field_path(err)}") from None
        if consume:
            items[index] = None
    _check_references(snapshot)
    return snapshot


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
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise SnapshotError(f"snapshot {source}: not gzip, JSON or YAML text: {err}") from None
    stripped = text.lstrip()
    try:
        if stripped.startswith("{") or stripped.startswith("["):
            return json.loads(text)
        return yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise SnapshotError(f"snapshot {source}: not valid JSON or YAML: {err}") from None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many long-lived objects.

    Every few thousand allocations CPython rescans the young heap, and a decoded cluster dump is millions of
    young objects that all survive: with collection on, loading a 10,000-node snapshot took 3.5× as long
    (benchmarks/bench_snapshot_load.py). Nothing built here forms garbage cycles, so nothing is lost by waiting.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_snapshot(path: str | Path) -> Snapshot:
    """Read a snapshot file; gzip is recognised by its magic bytes, YAML vs JSON by the first character."""
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise SnapshotError(f"snapshot {source}: {err.strerror}") from None
    with gc_paused():
        document = _decode(raw, source)
        del raw  # the file's bytes are dead weight at the peak
        return parse_snapshot(document, consume=True)


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
