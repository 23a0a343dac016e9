"""List + watch Nodes, Pods and PodGangs into the cluster store, one thread per kind.

Each thread lists (``store.replace``), then watches from the list's resourceVersion and applies every event
(``store.apply``). When the API server says the resourceVersion is too old (410 Gone: etcd compacted past it, as
happens after a long disconnect) the thread lists again and replaces, so the store ends exactly where the API is and
no change is lost. Bookmarks move the resume point forward without an object change, which keeps a quiet watch
from expiring. Any other failure waits with capped, jittered exponential back-off and resumes from the last
resourceVersion. ``store.mark_synced()`` is called once every kind has been listed.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from api.grove import PodGang
from scheduler.kube.backoff import Backoff
from scheduler.kube.connect import describe_error
from scheduler.kube.decoding import CHANGES, Decoder, EventType, Model, ModelDecoder, PodDecoder, Unchanged
from scheduler.kube.heartbeats import NodeDecoder
from scheduler.kube.listing import NODES, PODGANGS, PODS, Resource, list_decoded

__all__ = ["EventType", "Kind", "WatchedStore", "start_watchers"]

log = logging.getLogger(__name__)

Kind = Literal["Node", "Pod", "PodGang"]


class WatchedStore(Protocol):
    """What the watchers need of ``scheduler.extender.state.store.ClusterStore`` (and all they call on it)."""

    def replace(self, kind: Kind, objects: list[Model]) -> None:
        """Afterwards ``kind`` holds exactly ``objects`` (a list or relist result)."""

    def apply(self, kind: Kind, event_type: EventType, obj: Model) -> None:
        """One watch event; replays of known events must be harmless."""

    def mark_synced(self) -> None:
        """Every kind has been listed once."""

    def keeps_whole(self, *, labels: Mapping[str, str] | None, scheduler_name: str) -> bool:
        """Whether a pod is kept as a ``Pod`` (else as a ``ForeignPod``): the Pod watch decodes only that."""


class _Expired(Exception):
    """The watch's resourceVersion is gone: relist."""


@dataclass(frozen=True)
class _Watched:
    kind: Kind
    resource: Resource
    decoder: Callable[[WatchedStore], Decoder]


_WATCHED = (
    _Watched("Node", NODES, lambda store: NodeDecoder()),
    _Watched("Pod", PODS, lambda store: PodDecoder(keeps_whole=store.keeps_whole, stamp=PODS.stamp)),
    _Watched("PodGang", PODGANGS, lambda store: ModelDecoder(PodGang, stamp=PODGANGS.stamp)),
)


class _SyncLatch:
    """Calls ``mark_synced`` (then ``on_synced``) once, when the last kind finishes its first list."""

    def __init__(self, store: WatchedStore, kinds: set[Kind], on_synced: Callable[[], None] | None = None) -> None:
        self._store = store
        self._pending = set(kinds)
        self._lock = threading.Lock()
        self._on_synced = on_synced

    def listed(self, kind: Kind) -> None:
        with self._lock:
            if not self._pending:
                return
            self._pending.discard(kind)
            done = not self._pending
        if done:
            log.info("cluster state synced kinds=%s", ",".join(w.kind for w in _WATCHED))
            self._store.mark_synced()
            if self._on_synced is not None:
                self._on_synced()


def _lines(response: Any) -> Iterator[bytes]:
    """Newline-delimited JSON events from a chunked watch response, however the chunks split them."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        yield from (line for line in complete if line.strip())
    if buffer.strip():
        yield buffer


class _Watcher:
    def __init__(
        self,
        *,
        watched: _Watched,
        api_client: ApiClient,
        store: WatchedStore,
        stop: threading.Event,
        latch: _SyncLatch,
        watch_timeout: int,
        backoff: Backoff,
    ) -> None:
        self._watched = watched
        self._api_client = api_client
        self._call = watched.resource.list_call(api_client)
        self._decoder = watched.decoder(store)
        self._store = store
        self._stop = stop
        self._latch = latch
        self._watch_timeout = watch_timeout
        self._backoff = backoff
        self._response: Any = None
        self._response_lock = threading.Lock()

    @property
    def kind(self) -> Kind:
        return self._watched.kind

    def run(self) -> None:
        kind = self._watched.kind
        version: str | None = None
        while not self._stop.is_set():
            try:
                if version is None:
                    version = self._relist()
                version = self._watch(version)
                self._backoff.reset()
            except _Expired:
                # A relist is a full list: back off too, so a server that keeps expiring us is not hammered.
                delay = self._backoff.delay()
                log.info("watch expired kind=%s resourceVersion=%s relist_in=%.1fs", kind, version, delay)
                version = None
                self._stop.wait(delay)
            except (ApiException, HTTPError, OSError, ValueError) as err:
                if self._stop.is_set():
                    break
                if isinstance(err, ApiException) and err.status == 410:
                    version = None
                delay = self._backoff.delay()
                log.warning(
                    "watch failed kind=%s error=%s%s retry_in=%.1fs",
                    kind,
                    describe_error(err),
                    self._hint(err),
                    delay,
                )
                self._stop.wait(delay)
        log.info("watch stopped kind=%s", kind)

    def _hint(self, err: Exception) -> str:
        """What an operator can do about the two failures that never heal on their own."""
        status = err.status if isinstance(err, ApiException) else None
        if status == 404 and self._watched.kind == "PodGang":
            return " hint=the PodGang CRD is not installed (kubectl apply -f deploy/crds/podgang.yaml)"
        if status == 403:
            return f" hint=grant list/watch on {self._watched.resource.plural} (deploy/extender-rbac.yaml)"
        return ""

    def interrupt(self) -> None:
        """Unblock a thread parked in a socket read so it notices ``stop`` now, not at the next event."""
        with self._response_lock:
            response = self._response
        if response is not None:
            shutdown = getattr(response, "shutdown", None)  # urllib3 ≥ 2.3 unblocks a read in another thread
            (shutdown or response.close)()

    def _relist(self) -> str:
        objects, version = list_decoded(self._api_client, self._watched.resource, decode=self._decoder.page)
        self._store.replace(self._watched.kind, objects)
        log.info("listed kind=%s count=%d resourceVersion=%s", self._watched.kind, len(objects), version)
        self._latch.listed(self._watched.kind)
        return version

    def _watch(self, version: str) -> str:
        kwargs: dict[str, Any] = {
            "watch": True,
            "resource_version": version,
            "allow_watch_bookmarks": True,
            "timeout_seconds": self._watch_timeout,
            "_preload_content": False,
            # No read can legitimately stall past the server-side timeout; beyond that the connection is dead.
            "_request_timeout": (5.0, self._watch_timeout + 30.0),
        }
        if self._watched.resource.field_selector:
            kwargs["field_selector"] = self._watched.resource.field_selector
        response = self._call(**kwargs)
        with self._response_lock:
            self._response = response
        try:
            if self._stop.is_set():
                return version
            for line in _lines(response):
                version = self._handle_line(line, version)
                if self._stop.is_set():
                    break
        finally:
            with self._response_lock:
                self._response = None
            # A watch left mid-stream has unread bytes: close it rather than hand the connection back to the pool.
            response.close()
            response.release_conn()
        return version

    def _handle_line(self, line: bytes, version: str) -> str:
        """A change goes straight to the store; anything else (ERROR, BOOKMARK, an object the fast path refuses)
        takes the dict path, which knows what to do with it and names a bad object in the log."""
        change = self._decoder.change(line)
        if change is None:
            return self._handle(json.loads(line), version)
        if isinstance(change, Unchanged):
            return change.resource_version or version
        event_type, obj, new_version = change
        self._store.apply(self._watched.kind, event_type, obj)
        return new_version or version

    def _handle(self, event: dict[str, Any], version: str) -> str:
        event_type = event.get("type")
        obj = event.get("object") or {}
        if event_type == "ERROR":
            if obj.get("code") == 410:
                raise _Expired()
            raise ValueError(f"watch error {obj.get('code')}: {obj.get('reason')}: {obj.get('message')}")
        new_version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
        if event_type == "BOOKMARK":
            return new_version
        if event_type not in CHANGES:
            log.warning("unknown watch event kind=%s type=%s", self._watched.kind, event_type)
            return new_version
        parsed = self._decoder.parse(self._watched.resource.stamp(obj))
        if parsed is not None:
            self._store.apply(self._watched.kind, event_type, parsed)
        return new_version


def start_watchers(
    *,
    client: ApiClient,
    store: WatchedStore,
    stop: threading.Event,
    watch_timeout: int = 300,
    backoff: Callable[[], Backoff] = Backoff,
    on_synced: Callable[[], None] | None = None,
) -> list[threading.Thread]:
    """Start one daemon thread per kind (plus one that interrupts them on ``stop``) and return them.

    ``watch_timeout`` is the server-side length of one watch request in seconds; the thread then re-watches from
    where it was, which costs one request and no relist. ``on_synced`` runs once, on a watch thread, right after
    the store is marked synced.
    """
    latch = _SyncLatch(store, {w.kind for w in _WATCHED}, on_synced)
    watchers = [
        _Watcher(
            watched=w,
            api_client=client,
            store=store,
            stop=stop,
            latch=latch,
            watch_timeout=watch_timeout,
            backoff=backoff(),
        )
        for w in _WATCHED
    ]
    threads = [threading.Thread(target=w.run, name=f"watch-{w.kind}", daemon=True) for w in watchers]

    def interrupt_on_stop() -> None:
        stop.wait()
        for watcher in watchers:
            watcher.interrupt()

    threads.append(threading.Thread(target=interrupt_on_stop, name="watch-stopper", daemon=True))
    for thread in threads:
        thread.start()
    return threads
