"""What the reconciler's informers hold, and the writes of its own they have not brought back yet.

A pass reads its PodCliqueSet and every child from here instead of listing them: the informers already receive
each of those objects for the change queue, so a list per kind per pass only paid the API server to say again what
the watch had said (``tests/reconcile/test_workers.py`` holds the requests one PodCliqueSet costs).

A cache trails the API server, and a controller that trusts a stale view acts twice: a pod it created a moment
ago is not listed yet, so the next pass creates it again under a new random name; a surplus pod it deleted is
still listed, so the next pass deletes another. client-go's controllers guard with expectations and a mutation
cache; here every write's answer goes into an overlay (``wrote``; ``deleted`` leaves a tombstone) that reads prefer
until the watch delivers that object at the same or a newer ``resourceVersion``, or takes it away. Only our own
writes go into the overlay, and each is what the API server answered, so a read is never older than what this
process last did. An entry the watch never confirms (its stream broken, the object deleted by someone else in
between) is dropped after ``OVERLAY_SECONDS``, by which time the informer has relisted.

Objects are stored without ``metadata.managedFields`` (nothing here reads them; a PUT without them keeps the
server's) and handed out as copies, so a component that edits what it read edits only its copy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from api.grove import LABEL_PART_OF
from scheduler.kube.decoding import EventType
from scheduler.kube.json_copy import json_copy
from scheduler.reconcile.client import KubeObject

__all__ = ["OVERLAY_SECONDS", "OwnedCache"]

# Longer than an informer's back-off before it relists after a broken watch; short enough that an object someone
# else deleted while our watch was down is not believed present for long.
OVERLAY_SECONDS = 120.0

_GONE_KEPT = 10_000  # deletions remembered before the expired ones are swept out
_Key = tuple[str, str]  # namespace, name


def _key(obj: KubeObject) -> _Key:
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


def _part_of(obj: KubeObject) -> str | None:
    return (obj["metadata"].get("labels") or {}).get(LABEL_PART_OF)


def _version(obj: KubeObject | None) -> int | None:
    """An object's resourceVersion as a number. The API says to treat it as opaque; etcd's are integers that grow,
    and client-go's mutation cache compares them the same way. Not a number: unknown, so only time retires the
    overlay entry."""
    raw = (obj or {}).get("metadata", {}).get("resourceVersion")
    try:
        return int(raw)
    except (TypeError, ValueError):
        return None


def _slim(obj: KubeObject) -> KubeObject:
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


def _index(index: dict[Any, set[str]], at: Any, name: str) -> None:
    index.setdefault(at, set()).add(name)


def _unindex(index: dict[Any, set[str]], at: Any, name: str) -> None:
    names = index.get(at, set())
    names.discard(name)
    if not names:
        index.pop(at, None)


@dataclass
class _Written:
    """Our write's answer (``None``: we deleted it) and when it stops counting."""

    obj: KubeObject | None
    version: int | None
    until: float


class _KindStore:
    """One kind's objects by key and by the PodCliqueSet they are part of."""

    def __init__(self) -> None:
        self.synced = False
        self.objects: dict[_Key, KubeObject] = {}
        self.by_set: dict[_Key, set[str]] = {}  # (namespace, part-of) → names

    def put(self, obj: KubeObject) -> None:
        self.remove(_key(obj))
        key = _key(obj)
        self.objects[key] = obj
        if (part_of := _part_of(obj)) is not None:
            _index(self.by_set, (key[0], part_of), key[1])

    def remove(self, key: _Key) -> None:
        old = self.objects.pop(key, None)
        if old is not None and (part_of := _part_of(old)) is not None:
            _unindex(self.by_set, (key[0], part_of), key[1])


class OwnedCache:
    """The informers' objects of the kinds given, plus our unconfirmed writes; safe across the informer threads
    and the reconcile workers."""

    def __init__(self, kinds: Iterable[str], *, clock: Callable[[], float] = time.monotonic) -> None:
        self._stores = {kind: _KindStore() for kind in kinds}
        self._written: dict[tuple[str, _Key], _Written] = {}
        self._written_sets: dict[tuple[str, str, str], set[str]] = {}  # (kind, namespace, part-of) → names written
        # Deletions the watch reported lately: (kind, key) → (its resourceVersion, until when it is kept). Our write
        # of an object no newer than its deletion is retired by it, whichever reached us first (releasing the last
        # finalizer of an object being deleted is a write whose answer may come after the watch's DELETED).
        self._gone: dict[tuple[str, _Key], tuple[int | None, float]] = {}
        self._clock = clock
        self._lock = threading.Lock()

    def handler(self, kind: str) -> _Handler:
        """The informer handler that keeps ``kind``; register it before any handler that queues work, so the
        pass a change wakes reads the change."""
        return _Handler(self, kind)

    def serves(self, kind: str) -> bool:
        """Whether reads of ``kind`` come from here: it is cached and its informer has listed once."""
        with self._lock:
            store = self._stores.get(kind)
            return store is not None and store.synced

    def get(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        with self._lock:
            found = self._resolve(kind, (namespace, name))
            return json_copy(found) if found is not None else None

    def list(self, kind: str, *, namespace: str, part_of: str) -> list[KubeObject]:
        with self._lock:
            names = self._stores[kind].by_set.get((namespace, part_of), set()) | self._written_sets.get(
                (kind, namespace, part_of), set()
            )
            found = (self._resolve(kind, (namespace, name)) for name in sorted(names))
            return [json_copy(obj) for obj in found if obj is not None and _part_of(obj) == part_of]

    def wrote(self, kind: str, obj: KubeObject) -> None:
        """The API server's answer to our create, update or patch of ``obj``."""
        if kind not in self._stores or not isinstance(obj.get("metadata"), dict):
            return
        stored = _slim(json_copy(obj))
        key = _key(stored)
        with self._lock:
            self._forget(kind, key)
            self._written[(kind, key)] = _Written(stored, _version(stored), self._clock() + OVERLAY_SECONDS)
            if (part_of := _part_of(stored)) is not None:
                _index(self._written_sets, (kind, key[0], part_of), key[1])

    def deleted(self, kind: str, namespace: str, name: str, answer: KubeObject | None) -> None:
        """Our delete went through. An object still there (a finalizer, a pod's grace period) is what the answer
        shows; one gone is hidden until the watch takes it away too."""
        if kind not in self._stores:
            return
        meta = (answer or {}).get("metadata")
        if isinstance(meta, dict) and meta.get("deletionTimestamp") and meta.get("name") == name:
            self.wrote(kind, answer or {})
            return
        with self._lock:
            known = self._stores[kind].objects.get((namespace, name))
            version = _version(answer) if isinstance(meta, dict) else _version(known)
            self._forget(kind, (namespace, name))
            self._written[(kind, (namespace, name))] = _Written(None, version, self._clock() + OVERLAY_SECONDS)

    def pending(self) -> int:
        """Writes of ours the watch has not confirmed yet (for tests and logs)."""
        with self._lock:
            return len(self._written)

    # --- under the lock ----------------------------------------------------------------------------------

    def _deleted_since(self, kind: str, key: _Key, version: int | None) -> bool:
        """The watch reported the object deleted at or after ``version``."""
        gone = self._gone.get((kind, key))
        if gone is None or self._clock() >= gone[1]:
            return False
        return version is None or gone[0] is None or version <= gone[0]

    def _forget(self, kind: str, key: _Key) -> None:
        entry = self._written.pop((kind, key), None)
        if entry is not None and entry.obj is not None and (part_of := _part_of(entry.obj)) is not None:
            _unindex(self._written_sets, (kind, key[0], part_of), key[1])

    def _resolve(self, kind: str, key: _Key) -> KubeObject | None:
        cached = self._stores[kind].objects.get(key)
        entry = self._written.get((kind, key))
        if entry is None:
            return cached
        if self._confirmed(kind, key, entry, cached):
            self._forget(kind, key)
            return cached
        return entry.obj

    def _confirmed(self, kind: str, key: _Key, entry: _Written, cached: KubeObject | None) -> bool:
        """The watch has caught up with our write: it shows the object at the same or a newer version, or (for a
        delete, or a write the deletion followed, in either order of arrival) it reported it deleted since."""
        if self._clock() >= entry.until:
            return True
        if entry.obj is None:  # a tombstone: the watch took the object away, or brought one made since
            if cached is None:
                return True
            seen = _version(cached)
            return seen is not None and entry.version is not None and seen > entry.version
        if cached is None and self._deleted_since(kind, key, entry.version):
            return True
        seen = _version(cached)
        return seen is not None and entry.version is not None and seen >= entry.version

    def _retire(self, kind: str, keys: Iterable[_Key]) -> None:
        """Drop the entries the watch has caught up with (or that ran out), so none outlives its object."""
        store = self._stores[kind]
        for key in keys:
            entry = self._written.get((kind, key))
            if entry is not None and self._confirmed(kind, key, entry, store.objects.get(key)):
                self._forget(kind, key)

    def _listed(self, kind: str, objects: Sequence[KubeObject]) -> None:
        store = _KindStore()
        for obj in objects:
            store.put(_slim(obj))
        store.synced = True
        with self._lock:
            self._stores[kind] = store
            self._retire(kind, [key for written_kind, key in self._written if written_kind == kind])

    def _changed(self, kind: str, event_type: EventType, obj: KubeObject) -> None:
        key = _key(obj)
        with self._lock:
            store = self._stores[kind]
            if event_type == "DELETED":
                store.remove(key)
                now = self._clock()
                if len(self._gone) >= _GONE_KEPT:
                    self._gone = {k: v for k, v in self._gone.items() if v[1] > now}
                self._gone[(kind, key)] = (_version(obj), now + OVERLAY_SECONDS)
            else:
                self._gone.pop((kind, key), None)
                store.put(_slim(obj))
            self._retire(kind, [key])


class _Handler:
    """An informer's handler feeding one kind of an ``OwnedCache``."""

    def __init__(self, cache: OwnedCache, kind: str) -> None:
        self._cache = cache
        self._kind = kind

    def on_list(self, objects: Sequence[KubeObject]) -> None:
        self._cache._listed(self._kind, objects)

    def on_event(self, event_type: EventType, obj: KubeObject) -> None:
        self._cache._changed(self._kind, event_type, obj)
