"""``ApiHttp``: the extender's writes to the API server as bare HTTP/1.1 requests over kept-alive connections
(``scheduler.kube.connections``), on the caller's event loop, or on a private one for a thread without a loop.

The official client spends CPU on model objects, urllib3 and a worker thread for every write
(``benchmarks/bench_bind_client.py`` measures it; figures in docs/bench_bind_client.md), and the extender writes at
least once per pod it schedules. Writes need none of what it offers: the bodies are small dicts, the answers are read
only for their status and message. Connection settings come from the same ``kubernetes.client.Configuration`` as the
watches: server, CA bundle, client certificate, bearer token (read again through the configuration every
``TOKEN_SECONDS``, so a token it refreshes, such as an in-cluster projected token, is picked up; not before every
request, as reading it would add a good part of a bind's CPU to each).

A caller on an event loop (the release, on uvicorn's) awaits ``request`` over that loop's own connections: a hop to
another thread would add a hand-off's CPU to every bind (``bench_bind_client`` measures a bind both ways; figures in
docs/bench_bind_client.md). A thread without a loop (the background worker's status and Event writes) blocks on
``send``, served by a private loop on a daemon thread.

Neither retries a failure, with one exception: the API server's priority and fairness turns a request away with
429 and a ``Retry-After`` when the client's priority level is full, before reading it. Such a request is sent again
after that many seconds (``THROTTLED_RETRIES`` times at most), as client-go does; a large gang's thousand
nominations at once meet it, and a nomination lost is a pod kube-scheduler scans every node for. Evictions opt out:
a PodDisruptionBudget's refusal is a 429 with a ``Retry-After`` too, and the caller asks again on its own terms.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass

from kubernetes.client import Configuration

from scheduler.kube.connections import ApiUnreachable, Endpoint, Pool

__all__ = ["THROTTLED_RETRIES", "TOKEN_SECONDS", "ApiHttp", "ApiUnreachable", "Reply", "Request"]

log = logging.getLogger(__name__)

THROTTLED_RETRIES = 3
THROTTLED_WAIT_LIMIT = 10.0  # seconds: a longer Retry-After is honoured as this long
"""How often, and how long at most each time, a request turned away with 429 and a Retry-After is sent again."""

# Projected service-account tokens are rotated long before they expire (kubelet at 80 % of an hour or more), and
# the official client re-reads its token file once a minute: holding the header for 10 s never sends a dead one.
TOKEN_SECONDS = 10.0


@dataclass(frozen=True)
class Reply:
    """The API server's answer: its HTTP status and body (a ``v1.Status`` for errors)."""

    status: int
    body: bytes


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: bytes
    content_type: str = "application/json"
    retry_throttled: bool = True  # send again after a 429's Retry-After (``THROTTLED_RETRIES`` times at most)


def ssl_context(configuration: Configuration) -> ssl.SSLContext | bool:
    """The TLS settings of ``configuration`` as an ``SSLContext``: its CA (file or data) and client certificate.
    ``False`` when it says not to verify; plain ``True`` (system CAs) when it names none of its own."""
    if not configuration.verify_ssl:
        return False
    if not (configuration.ssl_ca_cert or configuration.ca_cert_data or configuration.cert_file):
        return True
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert, cadata=configuration.ca_cert_data)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    if configuration.assert_hostname is False:
        context.check_hostname = False
    return context


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop where uvicorn has it (a cheaper wake-up per write), else asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class ApiHttp:
    def __init__(
        self,
        configuration: Configuration,
        *,
        timeout: tuple[float, float],
        pool_size: int,
        user_agent: str = "grove-extender",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._configuration = configuration
        self._clock = clock
        self._auth: tuple[float, str] | None = None  # (read at, the Authorization field and its CRLF, or "")
        # tls-server-name in a kubeconfig: the name the API server's certificate is checked against.
        self._endpoint = Endpoint.of(
            configuration.host,
            tls=ssl_context(configuration),
            server_hostname=configuration.tls_server_name or None,
        )
        self._timeout = timeout
        self._pool_size = pool_size
        self._fields = f"User-Agent: {user_agent}\r\nAccept: application/json\r\n"
        if configuration.proxy:
            log.warning("proxy not used for writes proxy=%s", configuration.proxy)
        # Connections belong to one loop: a pool per loop that calls ``request``, plus the private loop of ``send``;
        # each held open by an async generator whose end closes it (``_held_open``).
        self._pools: dict[asyncio.AbstractEventLoop, Pool] = {}
        self._holders: dict[asyncio.AbstractEventLoop, AsyncGenerator[None, None]] = {}
        self._lock = threading.Lock()
        self._own: tuple[asyncio.AbstractEventLoop, threading.Thread] | None = None

    async def request(self, request: Request) -> Reply:
        """The request's answer (any status), on the running loop's connections; ``ApiUnreachable`` when none
        came."""
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop) or await self._open(loop)
        retries = THROTTLED_RETRIES if request.retry_throttled else 0
        attempt = 0
        while True:
            fields = f"{self._fields}Content-Type: {request.content_type}\r\n{self._authorization()}"
            head = pool.head(request.method, request.path, headers=fields, length=len(request.body))
            answer = await pool.request(head, request.body)
            if answer.status != 429 or answer.retry_after is None or attempt >= retries:
                return Reply(answer.status, answer.body)
            attempt += 1
            log.debug("throttled path=%s retry_after=%s attempt=%d", request.path, answer.retry_after, attempt)
            await asyncio.sleep(min(answer.retry_after, THROTTLED_WAIT_LIMIT))

    def send(self, request: Request) -> Reply:
        """``request`` for a thread without a loop (the background worker): blocks until the answer, which comes
        over this client's private loop (a daemon thread, started on first use)."""
        return asyncio.run_coroutine_threadsafe(self.request(request), self._own_loop()).result()

    def submit_each(
        self,
        requests: Sequence[Request],
        answered: Callable[[int, Reply | ApiUnreachable | None], None],
        *,
        send: Callable[[int], bool] = lambda _: True,
    ) -> None:
        """Send the requests over the private loop's pool, in order, as many at once as the pool holds, and return;
        ``answered(index, outcome)`` is called on that loop's thread as each ends. ``send(index)`` is asked as each
        one's turn comes; one it declines is not sent and is answered None. One hop to the loop for them all: a hop
        per request would add a hand-off's CPU to each (``bench_bind_client``)."""

        def wanted(index: int, request: Request) -> bool:
            try:
                return send(index)
            except Exception:  # every request is answered, whatever the test does: its caller may wait for it
                log.exception("send test failed path=%s; sent anyway", request.path)
                return True

        async def one(index: int, request: Request, turn: asyncio.Semaphore) -> None:
            outcome: Reply | ApiUnreachable | None = None
            async with turn:
                try:
                    if wanted(index, request):
                        outcome = await self.request(request)
                except ApiUnreachable as err:
                    outcome = err
            try:
                answered(index, outcome)
            except Exception:
                log.exception("answer callback failed path=%s", request.path)

        async def every() -> None:
            turn = asyncio.Semaphore(max(1, self._pool_size))
            await asyncio.gather(*(one(index, request, turn) for index, request in enumerate(requests)))

        asyncio.run_coroutine_threadsafe(every(), self._own_loop())

    async def aclose(self) -> None:
        """Close the running loop's connections now (they are closed anyway when the loop shuts down)."""
        holder = self._holders.pop(asyncio.get_running_loop(), None)
        if holder is not None:
            await holder.aclose()

    def close(self) -> None:
        """Close the private loop's connections and stop its thread; safe to call twice."""
        with self._lock:
            own, self._own = self._own, None
        if own is None:
            return
        loop, thread = own
        asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(timeout=5.0)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5.0)
        loop.close()

    def _authorization(self) -> str:
        now = self._clock()
        if self._auth is None or now - self._auth[0] >= TOKEN_SECONDS:
            bearer = self._configuration.auth_settings().get("BearerToken")
            value = (
                (bearer["value"] or "").strip() if bearer else ""
            )  # a token file's trailing newline is not the token's
            if "\r" in value or "\n" in value:
                raise ApiUnreachable("the kubeconfig's bearer token has a line break in it", timed_out=False)
            self._auth = (now, f"Authorization: {value}\r\n" if value else "")
        return self._auth[1]

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._own is None:
                loop = _new_loop()
                thread = threading.Thread(target=loop.run_forever, name="kube-writer", daemon=True)
                thread.start()
                self._own = (loop, thread)
            return self._own[0]

    async def _open(self, loop: asyncio.AbstractEventLoop) -> Pool:
        pool = Pool(self._endpoint, size=self._pool_size, timeout=self._timeout, clock=self._clock)
        self._pools[loop] = pool
        holder = self._held_open(loop, pool)
        await anext(holder)
        self._holders[loop] = holder
        return pool

    async def _held_open(self, loop: asyncio.AbstractEventLoop, pool: Pool) -> AsyncGenerator[None, None]:
        """Suspended while the pool lives. A loop tracks every started async generator and closes them as it shuts
        down (``asyncio.run``, uvicorn's runner: ``shutdown_asyncgens``), while its transports can still close: no
        caller (uvicorn's loop is the release's) has to remember to."""
        try:
            yield
        finally:
            self._pools.pop(loop, None)
            self._holders.pop(loop, None)  # nothing keeps an ended loop alive
            await pool.aclose()
