"""Watch events and list pages, from the API server's bytes into what an informer's handlers receive.

Nodes and PodGangs are decoded straight into their pydantic models: the JSON parser skips every field a model
does not read (a Pod's managedFields, a Node's images and conditions) without building it first; a Node event
that changes nothing the model keeps (a heartbeat) is recognised before that (``scheduler.kube.heartbeats``).

Pods are most of a cluster's events, and nearly all of them are pods of other schedulers, which the store keeps
only as capacity (``scheduler.kube.foreign.ForeignPod``). So a Pod event is first read for whose pod it is (labels
and ``schedulerName``, with msgspec, which skips the rest); then a pod of another scheduler goes through a typed
msgspec decode of what the store needs of it — identity, node, phase, the containers' requests and limits, overhead,
a fraction of the pydantic model's cost (``benchmarks/bench_watch.py``; figures in docs/bench_watch.md) — and
becomes a ``ForeignPod``, its quantities parsed once and bounds-checked as the model's would be; only our pods are
decoded into the full ``Pod`` model.

What the fast path cannot read — ERROR and BOOKMARK events, an object it refuses — comes back ``None``, and the
informer reads it as a dict: ``parse`` then names a bad object's field in the log and skips it. ``JsonDecoder``
has no fast path: its readers (the reconciler, initc) want objects whole, as the API server serves them.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Literal, NamedTuple, Protocol, TypeVar, cast

import msgspec
from pydantic import BaseModel, Field, ValidationError

from api.core import Node, Pod, PriorityClass, ResourceVector, effective_quantities, sum_requests, unusable_node
from api.grove import PodGang
from api.policy import PodDisruptionBudget
from api.quantity import QuantityError, check_units
from scheduler.kube.foreign import ForeignPod

__all__ = [
    "CHANGES",
    "Change",
    "Decoder",
    "EventType",
    "JsonDecoder",
    "Model",
    "ModelDecoder",
    "PodDecoder",
    "Unchanged",
]

log = logging.getLogger(__name__)

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Model = Node | Pod | ForeignPod | PodGang | PriorityClass | PodDisruptionBudget
Change = tuple[EventType, Model, str]
"""A change event: its type, the object as the store keeps it, and its resourceVersion ("" if it had none)."""
CHANGES: frozenset[str] = frozenset(("ADDED", "MODIFIED", "DELETED"))


class Unchanged(NamedTuple):
    """A change event whose object the store already holds as it would decode it: only its version moved."""

    resource_version: str


ModelT = TypeVar("ModelT", Node, Pod, PodGang, PriorityClass, PodDisruptionBudget)
ObjT_co = TypeVar("ObjT_co", covariant=True)


class Decoder(Protocol[ObjT_co]):
    """One informer's decoding, used by its thread alone: bytes in, the objects its handlers receive out."""

    def change(self, line: bytes) -> tuple[EventType, ObjT_co, str] | Unchanged | None:
        """A change event's line decoded, with its resourceVersion; ``Unchanged`` when the handlers already hold
        the object as it would be decoded (only its version moved); ``None`` when it is not a change the fast
        path reads."""

    def page(self, data: bytes) -> tuple[Sequence[ObjT_co], dict[str, Any]]:
        """A list page's items (bad ones skipped, named in the log) and its ``metadata``."""

    def parse(self, item: dict[str, Any]) -> ObjT_co | None:
        """One object from a dict (the slow path); ``None`` (and a warning naming the field) if it is invalid."""


class JsonDecoder:
    """Objects whole, as the API server serves them (list items stamped with ``kind``/``apiVersion``)."""

    def __init__(self, *, stamp: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self._stamp = stamp

    def change(self, line: bytes) -> None:
        return None  # one ``json.loads`` on the informer's dict path is the whole decode

    def page(self, data: bytes) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        body = json.loads(data)
        return [self._stamp(item) for item in body.get("items") or []], body.get("metadata") or {}

    def parse(self, item: dict[str, Any]) -> dict[str, Any]:
        return item


def _skipped(kind: str, item: Mapping[str, Any], err: ValidationError) -> None:
    # One malformed object (a hand-written PodGang, say) must not stall the whole mirror: skip it, loudly.
    meta = item.get("metadata") or {}
    first = err.errors()[0]
    log.warning(
        "skipping invalid object kind=%s name=%s/%s field=%s error=%s",
        kind,
        meta.get("namespace", ""),
        meta.get("name", "?"),
        ".".join(str(part) for part in first["loc"]),
        first["msg"],
    )


def _validated(model: type[ModelT], item: dict[str, Any]) -> ModelT | None:
    try:
        return model.model_validate(item)
    except ValidationError as err:
        _skipped(model.__name__, item, err)
        return None


class _Event(BaseModel, Generic[ModelT]):
    type: str
    object: ModelT


class _Page(BaseModel, Generic[ModelT]):
    """A list page decoded straight into models: at 100,000 pods the raw dicts of a whole list were most of the
    extender's peak memory."""

    metadata: dict[str, Any] = Field(default_factory=dict)
    items: list[ModelT] | None = None


class ModelDecoder(Generic[ModelT]):
    """Events and pages straight into one pydantic model."""

    def __init__(self, model: type[ModelT], *, stamp: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self._model: type[ModelT] = model
        self._event = _Event[model]  # type: ignore[valid-type]
        self._page = _Page[model]  # type: ignore[valid-type]
        self._stamp = stamp

    def change(self, line: bytes) -> Change | None:
        try:
            event = self._event.model_validate_json(line)
        except ValidationError:
            return None
        if event.type not in CHANGES:
            return None
        return cast(EventType, event.type), event.object, event.object.metadata.resourceVersion

    def page(self, data: bytes) -> tuple[list[Model], dict[str, Any]]:
        try:
            page = self._page.model_validate_json(data)
        except ValidationError:
            # The dict path skips (and names) just the bad objects.
            body = json.loads(data)
            items = (self.parse(self._stamp(item)) for item in body.get("items") or [])
            return [obj for obj in items if obj is not None], body.get("metadata") or {}
        return list(page.items or []), page.metadata

    def parse(self, item: dict[str, Any]) -> Model | None:
        parsed = _validated(self._model, item)
        if parsed is None and self._model is Node:
            # A node that cannot be read must not keep an older, usable version in the store: it stays, unusable.
            return unusable_node(item)
        return parsed


# --- Pods -------------------------------------------------------------------------------------------------------

Quantities = dict[str, str | int | float]


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""
    labels: dict[str, str] | None = None
    deletionTimestamp: str | None = None


class _Resources(msgspec.Struct):
    requests: Quantities | None = None
    limits: Quantities | None = None


class _Container(msgspec.Struct):
    resources: _Resources | None = None
    restartPolicy: str | None = None


class _Spec(msgspec.Struct):
    schedulerName: str = ""
    nodeName: str = ""
    priority: int | None = None
    containers: list[_Container] | None = None
    initContainers: list[_Container] | None = None
    overhead: Quantities | None = None


class _Status(msgspec.Struct):
    phase: str = ""


class _PodFacts(msgspec.Struct):
    """What the store needs of every pod."""

    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)
    status: _Status = msgspec.field(default_factory=_Status)


class _WhoseMeta(msgspec.Struct):
    labels: dict[str, str] | None = None


class _WhoseSpec(msgspec.Struct):
    schedulerName: str = ""


class _Whose(msgspec.Struct):
    """Just enough to tell ours from the others: everything else is skipped, not decoded."""

    metadata: _WhoseMeta = msgspec.field(default_factory=_WhoseMeta)
    spec: _WhoseSpec = msgspec.field(default_factory=_WhoseSpec)


class _WhoseEvent(msgspec.Struct):
    type: str
    object: _Whose


class _Manager(msgspec.Struct):
    manager: str = ""
    subresource: str = ""


class _ManagedMeta(msgspec.Struct):
    managedFields: list[_Manager] | None = None


class _Managed(msgspec.Struct):
    metadata: _ManagedMeta = msgspec.field(default_factory=_ManagedMeta)


class _ManagedEvent(msgspec.Struct):
    object: _Managed


class _FactsEvent(msgspec.Struct):
    object: _PodFacts


class _RawPage(msgspec.Struct):
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    items: list[msgspec.Raw] | None = None


_WHOSE = msgspec.json.Decoder(_Whose)
_WHOSE_EVENT = msgspec.json.Decoder(_WhoseEvent)
_FACTS = msgspec.json.Decoder(_PodFacts)
_FACTS_EVENT = msgspec.json.Decoder(_FactsEvent)
_POD_EVENT = _Event[Pod]
_MANAGED = msgspec.json.Decoder(_Managed)
_MANAGED_EVENT = msgspec.json.Decoder(_ManagedEvent)
_PAGE = msgspec.json.Decoder(_RawPage)
_SHARED_VECTORS = 4096


def _status_managers(pod: Pod, managed: _Managed) -> None:
    """Who owns a field of ``pod``'s status, read apart from the model (msgspec skips the fields each owns): only for
    a pod whose status names a nominated node, the one question it answers (``nominated_by_us``)."""
    entries = managed.metadata.managedFields or ()
    pod.metadata.status_managers = tuple(entry.manager for entry in entries if entry.subresource == "status")


def _units(quantities: Quantities | None) -> ResourceVector:
    return {name: check_units(name, raw) for name, raw in (quantities or {}).items()}


def _container(container: _Container) -> ResourceVector:
    resources = container.resources
    return _units(effective_quantities(resources.requests, resources.limits)) if resources else {}


class PodDecoder:
    """Pods: ours (``keeps_whole``) whole, the others as ``ForeignPod``."""

    def __init__(
        self,
        *,
        keeps_whole: Callable[..., bool],
        stamp: Callable[[dict[str, Any]], dict[str, Any]],
    ) -> None:
        self._keeps_whole = keeps_whole
        self._stamp = stamp
        # Pods of one workload request the same: one vector object for all of them (100,000 pods, a few shapes).
        self._vectors: dict[tuple[tuple[str, int], ...], ResourceVector] = {}

    def change(self, line: bytes) -> Change | None:
        # Whose pod first; then one decode of the line: ours into the model, the others into their capacity.
        try:
            head = _WHOSE_EVENT.decode(line)
            if head.type not in CHANGES:
                return None
            if self._ours(head.object):
                pod = _POD_EVENT.model_validate_json(line).object
                if pod.status.nominatedNodeName:
                    _status_managers(pod, _MANAGED_EVENT.decode(line).object)
                return cast(EventType, head.type), pod, pod.metadata.resourceVersion
            facts = _FACTS_EVENT.decode(line).object
            return cast(EventType, head.type), self._foreign(facts), facts.metadata.resourceVersion
        except (msgspec.DecodeError, QuantityError, ValidationError):
            return None

    def page(self, data: bytes) -> tuple[list[Model], dict[str, Any]]:
        try:
            page = _PAGE.decode(data)
        except msgspec.DecodeError:
            body = json.loads(data)
            items = (self.parse(self._stamp(item)) for item in body.get("items") or [])
            return [obj for obj in items if obj is not None], body.get("metadata") or {}
        objects: list[Model] = []
        for raw in page.items or ():
            obj: Model | None = self._item(raw)
            if obj is None:
                obj = self.parse(self._stamp(json.loads(bytes(raw))))
            if obj is not None:
                objects.append(obj)
        return objects, page.metadata

    def parse(self, item: dict[str, Any]) -> Model | None:
        try:
            facts = msgspec.convert(item, _PodFacts)
            if not self._ours(facts):
                return self._foreign(facts)
        except (msgspec.ValidationError, QuantityError):
            pass  # the model below names what is wrong
        pod = _validated(Pod, item)  # a valid pod of another scheduler the store slims itself
        if pod is not None and pod.status.nominatedNodeName:
            _status_managers(pod, msgspec.convert(item, _Managed))
        return pod

    def _item(self, raw: msgspec.Raw) -> Pod | ForeignPod | None:
        try:
            if self._ours(_WHOSE.decode(raw)):
                pod = Pod.model_validate_json(bytes(raw))
                if pod.status.nominatedNodeName:
                    _status_managers(pod, _MANAGED.decode(raw))
                return pod
            return self._foreign(_FACTS.decode(raw))
        except (msgspec.DecodeError, QuantityError, ValidationError):
            return None

    def _ours(self, pod: _Whose | _PodFacts) -> bool:
        return bool(self._keeps_whole(labels=pod.metadata.labels, scheduler_name=pod.spec.schedulerName))

    def _foreign(self, facts: _PodFacts) -> ForeignPod:
        spec = facts.spec
        requests = sum_requests(
            containers=[_container(c) for c in spec.containers or ()],
            init_containers=[(_container(c), c.restartPolicy == "Always") for c in spec.initContainers or ()],
            overhead=_units(spec.overhead),
        )
        meta = facts.metadata
        # Interned: 100,000 pods name a few namespaces, phases and (per node) node names.
        return ForeignPod(
            namespace=sys.intern(meta.namespace),
            name=meta.name,
            node=sys.intern(spec.nodeName),
            phase=sys.intern(facts.status.phase),
            requests=self._shared(requests),
            uid=meta.uid,
            priority=spec.priority or 0,
            deleting=meta.deletionTimestamp is not None,
        )

    def _shared(self, vector: ResourceVector) -> ResourceVector:
        key = tuple(sorted(vector.items()))
        shared = self._vectors.get(key)
        if shared is None:
            if len(self._vectors) >= _SHARED_VECTORS:
                self._vectors.clear()
            shared = self._vectors[key] = vector
        return shared
