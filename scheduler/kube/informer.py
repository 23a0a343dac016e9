"""The one list-watch-relist loop in the product: an ``Informer`` per resource, many handlers per informer.

What client-go's reflector and shared informer do for kube-scheduler and every controller, in small. An informer
lists its resource in pages (one consistent snapshot: ``listing.list_decoded``) and hands the whole list to every
handler (``on_list``: afterwards the handler's view holds exactly these objects); then it watches from the list's
resourceVersion, with bookmarks, and hands on each change (``on_event``). Its ``Decoder`` decides what an object
becomes — a pydantic model, a slim ``ForeignPod``, a plain dict — so every handler of one informer receives one
type. The extender's mirror (``mirror``), the reconciler's change queue and ``initc`` are such handlers; none of
them opens a watch of its own.

A watch the API server ends (its timeout) is opened again from the last resourceVersion seen — a change's, a
bookmark's, or a heartbeat's the decoder recognised as no change — which costs one request and no relist. A stream
that breaks, or a request that fails, waits with capped, jittered back-off (``Backoff``) and resumes the same way.
Only when the API server says the version is gone (410 Gone: etcd compacted past it, as after a long disconnect)
does the informer list again; the handlers get the new list whole, so their view ends exactly where the API is and
no change is lost. A relist is a full list, so it backs off too: a server that keeps expiring us is not hammered.

An informer that cannot list or open a watch keeps retrying and says for how long it has failed (``failing_for``):
meanwhile its handlers' view stays where it was, and a consumer that must not act on an old view (the extender's
``/readyz`` and verbs) asks. A watch that opens, or a list that arrives, ends the run of failures.

``start_informers`` runs informers on threads of their own, calls ``on_synced`` once every one of them has listed
once (client-go's ``WaitForCacheSync``), and interrupts them when ``stop`` is set.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from scheduler.kube.backoff import Backoff
from scheduler.kube.connect import describe_error
from scheduler.kube.decoding import CHANGES, Decoder, EventType, Unchanged
from scheduler.kube.listing import Resource, list_decoded

__all__ = ["WATCH_SECONDS", "EventHandler", "Informer", "start_informers"]

log = logging.getLogger(__name__)

ObjT = TypeVar("ObjT")
ObjT_contra = TypeVar("ObjT_contra", contravariant=True)

WATCH_SECONDS = 300
"""Server-side length of one watch request: the watch is then opened again from where it was."""


class EventHandler(Protocol[ObjT_contra]):
    """A consumer of one informer, called on the informer's thread, in the order the API server sent things."""

    def on_list(self, objects: Sequence[ObjT_contra]) -> None:
        """A list or relist: afterwards the handler's view holds exactly ``objects``."""

    def on_event(self, event_type: EventType, obj: ObjT_contra) -> None:
        """One change. After a relist, changes the handler has seen may come again: replays must be harmless."""


class _Expired(Exception):
    """The watch's resourceVersion is gone: relist."""


def _lines(response: Any) -> Iterator[bytes]:
    """Newline-delimited JSON events from a chunked watch response, however the chunks split them."""
    buffer = b""
    # amt=None: each chunk as it arrives, not once urllib3's read size has piled up.
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        yield from (line for line in complete if line.strip())
    if buffer.strip():
        yield buffer


class Informer(Generic[ObjT]):
    """List, watch and relist one resource — cluster-wide or in ``namespace``, all of it or what ``label_selector``
    picks — decoded by ``decoder`` for the handlers ``add_handler`` registers before ``run``.

    ``hints`` maps an HTTP status that never heals by itself (403, a 404 for a CRD not installed) to what an
    operator can do about it, for the log.
    """

    def __init__(
        self,
        *,
        api_client: ApiClient,
        resource: Resource,
        decoder: Decoder[ObjT],
        namespace: str | None = None,
        label_selector: str | None = None,
        watch_timeout: int = WATCH_SECONDS,
        backoff: Backoff | None = None,
        hints: Mapping[int, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.resource = resource
        self._api_client = api_client
        self._decoder = decoder
        self._namespace = namespace
        self._label_selector = label_selector
        self._call = resource.list_call(api_client, namespace=namespace)
        self._watch_timeout = watch_timeout
        self._backoff = backoff or Backoff()
        self._hints = dict(hints or {})
        self._handlers: tuple[EventHandler[ObjT], ...] = ()
        self._response: Any = None
        self._response_lock = threading.Lock()
        self._clock = clock
        self._failing_since: float | None = None  # the first failure of the current run of them

    @property
    def kind(self) -> str:
        return self.resource.kind

    def failing_for(self) -> float | None:
        """Seconds since the first of the failures to list or to open a watch that nothing has ended yet (None while
        the informer works): how long its handlers' view may be behind the API server."""
        since = self._failing_since
        return None if since is None else max(0.0, self._clock() - since)

    def add_handler(self, handler: EventHandler[ObjT]) -> None:
        """Register ``handler``; do it before ``run``, so that it hears the first list."""
        self._handlers = (*self._handlers, handler)

    def run(self, stop: threading.Event, *, on_listed: Callable[[], None] | None = None) -> None:
        """List, watch and relist until ``stop`` is set (``interrupt`` makes that prompt). ``on_listed`` runs after
        each list has reached the handlers."""
        kind = self.kind
        version: str | None = None
        while not stop.is_set():
            try:
                if version is None:
                    version = self._relist()
                    if on_listed is not None:
                        on_listed()
                    continue  # a handler may have set ``stop``: look before opening a watch
                version = self._watch(version, stop)
                self._backoff.reset()
            except _Expired:
                delay = self._backoff.delay()
                log.info("watch expired kind=%s resourceVersion=%s relist_in=%.1fs", kind, version, delay)
                version = None
                stop.wait(delay)
            except (ApiException, HTTPError, OSError, ValueError) as err:
                if stop.is_set():
                    break
                if self._failing_since is None:
                    self._failing_since = self._clock()
                if isinstance(err, ApiException) and err.status == 410:
                    version = None
                delay = self._backoff.delay()
                log.warning(
                    "watch failed kind=%s error=%s%s retry_in=%.1fs", kind, describe_error(err), self._hint(err), delay
                )
                stop.wait(delay)
        log.info("watch stopped kind=%s", kind)

    def interrupt(self) -> None:
        """Unblock a thread parked in a socket read so that it notices ``stop`` now, not at the next event."""
        with self._response_lock:
            response = self._response
        if response is not None:
            shutdown = getattr(response, "shutdown", None)  # urllib3 ≥ 2.3 unblocks a read in another thread
            with contextlib.suppress(OSError):  # the stream may have ended and closed on its own meanwhile
                (shutdown or response.close)()

    def _hint(self, err: Exception) -> str:
        hint = self._hints.get(err.status) if isinstance(err, ApiException) else None
        return f" hint={hint}" if hint else ""

    def _relist(self) -> str:
        objects, version = list_decoded(
            self._api_client,
            self.resource,
            decode=self._decoder.page,
            namespace=self._namespace,
            label_selector=self._label_selector,
        )
        for handler in self._handlers:
            handler.on_list(objects)
        self._failing_since = None
        log.info("listed kind=%s count=%d resourceVersion=%s", self.kind, len(objects), version)
        return version

    def _watch(self, version: str, stop: threading.Event) -> str:
        kwargs: dict[str, Any] = {
            "watch": True,
            "resource_version": version,
            "allow_watch_bookmarks": True,
            "timeout_seconds": self._watch_timeout,
            "_preload_content": False,
            # No read can legitimately stall past the server-side timeout; beyond that the connection is dead.
            "_request_timeout": (5.0, self._watch_timeout + 30.0),
        }
        if self.resource.field_selector:
            kwargs["field_selector"] = self.resource.field_selector
        if self._label_selector:
            kwargs["label_selector"] = self._label_selector
        response = self._call(**kwargs)
        self._failing_since = None  # the API server answered: changes flow again from where the view is
        with self._response_lock:
            self._response = response
        try:
            # A stop that came while the request was under way found nothing to interrupt: end this one now.
            if stop.is_set():
                return version
            for line in _lines(response):
                version = self._handle_line(line, version)
                if stop.is_set():
                    break
        finally:
            with self._response_lock:
                self._response = None
            # A watch left mid-stream has unread bytes: close it rather than hand the connection back to the pool.
            response.close()
            response.release_conn()
        return version

    def _handle_line(self, line: bytes, version: str) -> str:
        """A change goes straight to the handlers; anything else (ERROR, BOOKMARK, an object the fast path refuses)
        takes the dict path, which knows what to do with it and names a bad object in the log."""
        change = self._decoder.change(line)
        if change is None:
            return self._handle(json.loads(line), version)
        if isinstance(change, Unchanged):
            return change.resource_version or version
        event_type, obj, new_version = change
        for handler in self._handlers:
            handler.on_event(event_type, obj)
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
            log.warning("unknown watch event kind=%s type=%s", self.kind, event_type)
            return new_version
        parsed = self._decoder.parse(self.resource.stamp(obj))
        if parsed is not None:
            for handler in self._handlers:
                handler.on_event(event_type, parsed)
        return new_version


class _SyncLatch:
    """Calls ``on_synced`` once, when the last of ``count`` informers finishes its first list."""

    def __init__(self, count: int, on_synced: Callable[[], None] | None) -> None:
        self._pending = count
        self._lock = threading.Lock()
        self._on_synced = on_synced

    def first_list(self) -> Callable[[], None]:
        """The ``on_listed`` of one informer: counts its first list only."""
        heard = False

        def listed() -> None:
            nonlocal heard
            with self._lock:
                if heard:
                    return
                heard = True
                self._pending -= 1
                done = self._pending == 0
            if done and self._on_synced is not None:
                self._on_synced()

        return listed


def start_informers(
    informers: Sequence[Informer[Any]], stop: threading.Event, *, on_synced: Callable[[], None] | None = None
) -> list[threading.Thread]:
    """Run each informer on a daemon thread of its own, plus one that interrupts them all when ``stop`` is set;
    return the threads. ``on_synced`` runs once, on an informer's thread, after every informer has listed once."""
    latch = _SyncLatch(len(informers), on_synced)
    threads = [
        threading.Thread(
            target=informer.run,
            args=(stop,),
            kwargs={"on_listed": latch.first_list()},
            name=f"watch-{informer.kind}",
            daemon=True,
        )
        for informer in informers
    ]

    def interrupt_on_stop() -> None:
        stop.wait()
        for informer in informers:
            informer.interrupt()

    threads.append(threading.Thread(target=interrupt_on_stop, name="watch-stopper", daemon=True))
    for thread in threads:
        thread.start()
    return threads
