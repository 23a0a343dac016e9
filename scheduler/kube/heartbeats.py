"""Node events that change nothing the store reads — kubelet heartbeats — recognised before the model decode.

A kubelet rewrites its Node's conditions (``lastHeartbeatTime``) every status update; that is most Node events,
and the pydantic decode of each one's whole Node is spent on a copy equal to the one stored but for its resourceVersion.
``NodeDecoder`` first reads, with msgspec, the raw JSON of just the fields the ``Node`` model keeps (metadata but its
resourceVersion; spec; allocatable and capacity), skipping conditions and images at a fraction of the decode's cost
(``benchmarks/bench_watch.py``; figures in docs/bench_watch.md), and when those bytes equal the ones it last decoded for
that node, answers ``Unchanged`` with the new resourceVersion for the watch to resume from. Anything else goes through
the model as before.

What it remembers is forgotten whenever it cannot be sure the store holds what it decoded: on every list page (a
relist replaces the store), when a node is deleted, and when an event falls to the dict path.
"""

from __future__ import annotations

from typing import Any

import msgspec

from api.core import Node
from scheduler.kube.decoding import Change, Model, ModelDecoder, Unchanged
from scheduler.kube.listing import NODES

__all__ = ["NodeDecoder"]


_ABSENT = msgspec.Raw(b"")  # a field not sent


class _Meta(msgspec.Struct):
    name: str = ""
    resourceVersion: str = ""
    # Raw JSON of every other field ``ObjectMeta`` keeps, compared as bytes.
    namespace: msgspec.Raw = _ABSENT
    uid: msgspec.Raw = _ABSENT
    labels: msgspec.Raw = _ABSENT
    annotations: msgspec.Raw = _ABSENT
    creationTimestamp: msgspec.Raw = _ABSENT
    deletionTimestamp: msgspec.Raw = _ABSENT
    ownerReferences: msgspec.Raw = _ABSENT


class _Status(msgspec.Struct):
    allocatable: msgspec.Raw = _ABSENT
    capacity: msgspec.Raw = _ABSENT


class _Node(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: msgspec.Raw = _ABSENT
    status: _Status = msgspec.field(default_factory=_Status)


class _Event(msgspec.Struct):
    type: str = ""
    object: _Node = msgspec.field(default_factory=_Node)


_EVENT = msgspec.json.Decoder(_Event)


def _read(node: _Node) -> tuple[bytes, ...]:
    """What the ``Node`` model keeps, but the resourceVersion, as bytes (copies: the line itself is not kept)."""
    meta, status = node.metadata, node.status
    return (
        bytes(meta.namespace),
        bytes(meta.uid),
        bytes(meta.labels),
        bytes(meta.annotations),
        bytes(meta.creationTimestamp),
        bytes(meta.deletionTimestamp),
        bytes(meta.ownerReferences),
        bytes(node.spec),
        bytes(status.allocatable),
        bytes(status.capacity),
    )


class NodeDecoder:
    """``ModelDecoder(Node)`` that answers ``Unchanged`` for a MODIFIED event changing nothing the model keeps."""

    def __init__(self) -> None:
        self._model = ModelDecoder(Node, stamp=NODES.stamp)
        self._seen: dict[str, tuple[bytes, ...]] = {}

    def change(self, line: bytes) -> Change | Unchanged | None:
        try:
            event = _EVENT.decode(line)
        except msgspec.DecodeError:
            self._seen.clear()  # which node it was is unknown: the dict path may replace any
            return None
        name = event.object.metadata.name
        read = _read(event.object)
        if event.type == "MODIFIED" and self._seen.get(name) == read:
            return Unchanged(event.object.metadata.resourceVersion)
        change = self._model.change(line)
        if change is None or change[0] == "DELETED":
            self._seen.pop(name, None)
        else:
            self._seen[name] = read
        return change

    def page(self, data: bytes) -> tuple[list[Model], dict[str, Any]]:
        self._seen.clear()
        return self._model.page(data)

    def parse(self, item: dict[str, Any]) -> Model | None:
        return self._model.parse(item)
