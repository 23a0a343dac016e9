"""A TCP proxy on loopback that an end-to-end test can break on purpose.

The harness (benchmarks/controlplane) runs etcd, kube-apiserver, kube-scheduler and the extender as local processes,
which reach each other over loopback, a network that never fails. Two faults need something in between:

- A network cut between the extender and kube-apiserver. The extender's kubeconfig names the proxy, which forwards
  to kube-apiserver's port; it is plain TCP, so TLS passes through untouched. ``cut()`` resets every forwarded
  connection at once and resets each new one until ``mend()``: what a client sees of a partition when its peer's
  side gave up, and of its reconnects. ``cut(mode="blackhole")`` keeps every connection open and forwards nothing
  either way, which is what a partition looks like while it lasts: clients hang until their own timeouts fire.
- A readiness-routed endpoint in front of two replicas of the extender, as a Kubernetes Service that routes only
  to Ready pods: ``TcpProxy(route=ReadinessRoute(...))`` asks its route for a backend for each new connection, and a
  connection stays on its backend until either side closes it.

The proxy serves on its own asyncio loop in a daemon thread; ``cut``, ``mend`` and ``stop`` are called from any other
thread and return once the loop has done what they ask.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import logging
import socket
import struct
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, TypeVar

__all__ = ["Address", "ReadinessRoute", "Route", "TcpProxy", "to"]

log = logging.getLogger(__name__)

Address = tuple[str, int]
Route = Callable[[], Address | None]

_T = TypeVar("_T")

# One read is forwarded as one write: large reads keep a bulk transfer (a LIST of every pod) to few system calls.
_CHUNK = 256 * 1024
_CONNECT_TIMEOUT = 5.0
_CALL_TIMEOUT = 30.0
# SO_LINGER on, timeout 0: close() sends a RST and drops what is unsent, as a peer whose side of the connection is
# gone answers, rather than the orderly FIN a client could take for the end of a response.
_LINGER_ZERO = struct.pack("ii", 1, 0)


def to(host: str, port: int) -> Callable[[], Address]:
    """A route to one fixed backend."""
    address = (host, port)
    return lambda: address


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_ZERO)
    writer.transport.abort()


@dataclass(eq=False)
class _Link:
    """One client connection and, once routed, the connection to its backend."""

    client: asyncio.StreamWriter
    task: asyncio.Task[None]
    backend: asyncio.StreamWriter | None = None

    def reset(self) -> None:
        _reset(self.client)
        if self.backend is not None:
            _reset(self.backend)
        self.task.cancel()


class TcpProxy:
    """Forwards each connection to ``host:port`` to the backend ``route()`` names for it then; see the module.

    ``route`` runs on the proxy's loop, so it must answer at once (``to`` and ``ReadinessRoute`` do). It returning
    None, raising, or its backend refusing the connection resets the client's connection, as a Service with no
    ready endpoint does.
    """

    port: int

    def __init__(self, *, route: Route, port: int = 0, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port
        self._route = route
        self._mode: Literal["open", "reset", "blackhole"] = "open"
        self._closing = False
        self._links: set[_Link] = set()
        self._accepted = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        # Set except during a blackhole: every byte, EOF and reset to be forwarded waits on it.
        self._flowing = asyncio.Event()
        self._flowing.set()

    @property
    def connections(self) -> int:
        """Client connections open through the proxy now, those a blackhole holds included."""
        return len(self._links)

    @property
    def accepted(self) -> int:
        """Client connections accepted since start, those reset at once (cut, no route) included."""
        return self._accepted

    def start(self) -> TcpProxy:
        """Bind (so ``port`` is known on return; a port of 0 picks a free one) and serve on a daemon thread."""
        if self._thread is not None or self._closing:
            raise RuntimeError("a proxy starts once")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            # The caller may put the proxy on a port a process it stopped has just released (TIME_WAIT).
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(128)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        # The selector loop whatever the event loop policy says, so how a connection is aborted is the one known here.
        self._loop = asyncio.SelectorEventLoop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"tcp-proxy-{self.port}", daemon=True)
        self._thread.start()
        self._server = self._call(asyncio.start_server(self._serve, sock=sock, limit=_CHUNK))
        return self

    def cut(self, *, mode: Literal["reset", "blackhole"] = "reset") -> None:
        """Break the path until ``mend()``.

        ``reset``: every open connection is closed at once with a RST on both sides, and each new one is accepted and
        reset at once. ``blackhole``: open connections stay open, new ones are accepted and routed nowhere, and
        nothing is forwarded either way, neither bytes nor a close. A blackhole then ``mend()`` resumes every held
        connection where it stalled, nothing lost (a partition TCP outlasts); a client that gave up meanwhile has
        closed its connection, which is passed on then. For a partition TCP does not outlast, where every client
        must reconnect, cut in blackhole mode, then in reset mode, then mend.
        """
        if mode not in ("reset", "blackhole"):
            raise ValueError(f"mode must be 'reset' or 'blackhole', not {mode!r}")
        self._call(self._cut(mode))

    def mend(self) -> None:
        """End a cut: new connections are forwarded again, and those a blackhole held resume."""
        self._call(self._mend())

    def stop(self) -> None:
        """Reset every connection, stop listening, and end the loop and its thread."""
        if self._loop is None or self._thread is None:
            return
        self._call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
        self._loop = self._thread = self._server = None

    def __enter__(self) -> TcpProxy:
        return self if self._thread is not None else self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def _call(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        if self._loop is None:
            coroutine.close()
            raise RuntimeError("the proxy is not started")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(_CALL_TIMEOUT)

    async def _cut(self, mode: Literal["reset", "blackhole"]) -> None:
        self._mode = mode
        if mode == "blackhole":
            self._flowing.clear()
        else:
            await self._reset_all()

    async def _mend(self) -> None:
        self._mode = "open"
        self._flowing.set()

    async def _close(self) -> None:
        self._closing = True
        assert self._server is not None
        self._server.close()
        # A connection accepted just now has a handler task that has not run yet; let it run and see _closing, since
        # a task cancelled before its first step never gets to close its connection.
        await asyncio.sleep(0)
        await self._reset_all()
        await self._server.wait_closed()

    async def _reset_all(self) -> None:
        links = list(self._links)
        for link in links:
            link.reset()
        await asyncio.gather(*(link.task for link in links), return_exceptions=True)
        # An aborted transport closes its socket on the loop's next turn; on return the RSTs are sent.
        await asyncio.sleep(0)

    def _pick(self) -> Address | None:
        try:
            return self._route()
        except Exception:
            log.exception("tcp proxy :%d: the route failed", self.port)
            return None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._accepted += 1
        if self._mode == "reset" or self._closing:
            _reset(writer)
            return
        task = asyncio.current_task()
        assert task is not None
        link = _Link(writer, task)
        self._links.add(link)
        try:
            await self._flowing.wait()
            backend = self._pick()
            if backend is None:
                _reset(writer)
                return
            try:
                connecting = asyncio.open_connection(*backend, limit=_CHUNK)
                backend_reader, backend_writer = await asyncio.wait_for(connecting, _CONNECT_TIMEOUT)
            except (OSError, TimeoutError) as err:
                log.info("tcp proxy :%d: backend %s:%d: %r", self.port, *backend, err)
                _reset(writer)
                return
            link.backend = backend_writer
            await self._splice(reader, writer, backend_reader, backend_writer)
        finally:
            self._links.discard(link)

    async def _splice(
        self,
        client_reader: asyncio.StreamReader,
        client: asyncio.StreamWriter,
        backend_reader: asyncio.StreamReader,
        backend: asyncio.StreamWriter,
    ) -> None:
        pumps = [
            asyncio.create_task(self._pump(client_reader, backend)),
            asyncio.create_task(self._pump(backend_reader, client)),
        ]
        try:
            await asyncio.gather(*pumps)
        except OSError:
            # One side reset (or its write failed): the other learns it the same way.
            _reset(client)
            _reset(backend)
        else:
            client.close()
            backend.close()
        finally:
            for pump in pumps:
                pump.cancel()

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        """Forward one direction until its EOF, then half-close the other side, as the sender did."""
        try:
            while data := await source.read(_CHUNK):
                await self._flowing.wait()
                sink.write(data)
                await sink.drain()
            await self._flowing.wait()
            if sink.can_write_eof():
                sink.write_eof()
        except OSError:
            await self._flowing.wait()  # a reset is not passed on through a blackhole either
            raise


_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no http_proxy from the environment


def _probe(url: str, timeout: float) -> bool:
    try:
        with _opener.open(url, timeout=timeout) as response:
            return 200 <= int(response.status) < 400  # as the kubelet counts an HTTP probe
    except urllib.error.HTTPError as err:
        err.close()
        return False
    except (OSError, http.client.HTTPException):
        return False


class ReadinessRoute:
    """A route to the backends whose readiness URL answers, as a Service routes only to Ready pods.

    A background thread GETs each backend's URL every ``interval`` seconds; a 2xx or 3xx answer within ``timeout``
    makes it ready, anything else (an error status, a refused connection, no answer) not ready. One failed probe is
    enough, where the kubelet waits for several: the test flips readiness and wants the route to follow soon. Calls
    take the ready backends in turn; with none ready they return None.
    """

    def __init__(self, backends: Sequence[tuple[Address, str]], *, interval: float = 0.5, timeout: float = 1.0) -> None:
        self._backends = [((host, port), url) for (host, port), url in backends]
        self._interval = interval
        self._timeout = timeout
        self._lock = threading.Lock()
        self._ready: list[Address] = []
        self._turn = 0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self) -> Address | None:
        with self._lock:
            if not self._ready:
                return None
            self._turn += 1
            return self._ready[self._turn % len(self._ready)]

    @property
    def ready(self) -> list[Address]:
        """The backends ready at the last probe, in the order given."""
        with self._lock:
            return list(self._ready)

    def poll(self) -> None:
        """Probe every backend once, now."""
        ready = [address for address, url in self._backends if _probe(url, self._timeout)]
        with self._lock:
            self._ready = ready

    def start(self) -> ReadinessRoute:
        """Probe once before returning (so the first connection finds a route), then every ``interval`` seconds."""
        if self._thread is not None:
            raise RuntimeError("the route is already started")
        self._stopping.clear()
        self.poll()
        self._thread = threading.Thread(target=self._run, name="readiness-route", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stopping.set()
        self._thread.join()
        self._thread = None

    def __enter__(self) -> ReadinessRoute:
        return self if self._thread is not None else self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stopping.wait(self._interval):
            self.poll()
