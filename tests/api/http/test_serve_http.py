"""``grove-extender serve`` as a process on loopback: real sockets, real TLS handshakes, slow and broken clients.

Two servers over the demo snapshot, started once for the module: one in plain HTTP with a one-second request
deadline, and one behind mTLS with certificates from ``grove-extender certs``'s own issuer and a one-second handshake
deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from api.http.limits import MAX_HEADER_FIELDS
from api.http.server import Listener, Timeouts, _config
from api.http.tls import CLOSE_TIMEOUT, DEFAULT_HANDSHAKE_TIMEOUT
from scheduler.cli import build_parser, main
from scheduler.cli.certs import Authority, issue
from scheduler.cli.listeners import build_listeners
from tests.conftest import REPO_ROOT

DEMO = REPO_ROOT / "benchmarks" / "snapshots" / "demo.json"
FILTER = (REPO_ROOT / "deploy" / "requests" / "filter-demo.json").read_bytes()
PATIENCE = 60.0  # for what must happen: generous, so a loaded machine never fails a test
HANDSHAKE = 1.0  # the mTLS server's --tls-handshake-timeout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    log: Path
    port: int
    probe_port: int
    debug_port: int

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _start(tmp: Path, name: str, *extra: str) -> Server:
    port, probe_port, debug_port = free_port(), free_port(), free_port()
    log = tmp / f"{name}.log"
    command = [
        str(Path(sys.executable).with_name("grove-extender")),  # the console script, as a user runs it
        "serve",
        "--snapshot",
        str(DEMO),
        "--port",
        str(port),
        "--probe-port",
        str(probe_port),
        "--debug-port",
        str(debug_port),
        *extra,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
    server = Server(process, log, port, probe_port, debug_port)
    deadline = time.monotonic() + PATIENCE
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{probe_port}/readyz", timeout=5).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"serve did not become ready:\n{server.log_text()}")
        time.sleep(0.1)


def _stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=PATIENCE)
    except subprocess.TimeoutExpired:
        server.process.kill()
        raise


def write_pki(root: Path) -> Pki:
    """A CA, the server's and kube-scheduler's certificates for ``localhost``, a client certificate of the same CA
    under another name, and a stranger's client certificate from another CA, as files in ``root``."""
    authority = Authority.create(days=1)
    ours = {
        "ca": authority.pem(),
        "server_cert": (server := authority.server(["localhost"])).cert,
        "server_key": server.key,
        "client_cert": (client := authority.client("grove-scheduler")).cert,
        "client_key": client.key,
        "intruder_cert": (intruder := authority.client("someone-else")).cert,
        "intruder_key": intruder.key,
    }
    for name, pem in ours.items():
        (root / f"{name}.pem").write_bytes(pem)
    stranger = root / "stranger"
    stranger.mkdir()
    theirs = issue(server_names=["localhost"], days=1).write_pems(stranger)
    return Pki(
        **{name: root / f"{name}.pem" for name in ours},
        stranger_cert=theirs["client_cert"],
        stranger_key=theirs["client_key"],
    )


@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path  # kube-scheduler's: names grove-scheduler
    client_key: Path
    intruder_cert: Path  # signed by the same CA, naming someone else
    intruder_key: Path
    stranger_cert: Path  # a client certificate from another CA
    stranger_key: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return write_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[tuple[Server, Server]]:
    tmp = tmp_path_factory.mktemp("serve")
    plain = _start(tmp, "plain", "--request-timeout", "1", "--max-body-bytes", "100000")
    try:
        tls = _start(
            tmp,
            "tls",
            "--tls-cert",
            str(pki.server_cert),
            "--tls-key",
            str(pki.server_key),
            "--client-ca",
            str(pki.ca),
            "--tls-handshake-timeout",
            str(HANDSHAKE),
        )
    except BaseException:
        _stop(plain)
        raise
    yield plain, tls
    _stop(plain)
    _stop(tls)


@pytest.fixture(scope="module")
def plain(servers: tuple[Server, Server]) -> Server:
    return servers[0]


@pytest.fixture(scope="module")
def tls(servers: tuple[Server, Server]) -> Server:
    return servers[1]


def closed_by_server(sock: socket.socket) -> bool:
    """Reads until the server closes; False if it keeps the connection open past PATIENCE."""
    sock.settimeout(PATIENCE)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


# --- plain HTTP: slow and broken clients ------------------------------------------------------------------------


def test_a_filter_is_answered_and_debug_lives_on_its_own_port(plain: Server) -> None:
    reply = httpx.post(f"http://127.0.0.1:{plain.port}/filter", content=FILTER, timeout=PATIENCE)
    assert reply.status_code == 200 and len(reply.json()["NodeNames"]) == 1
    assert httpx.get(f"http://127.0.0.1:{plain.port}/debug/gangs", timeout=PATIENCE).status_code == 404
    assert httpx.get(f"http://127.0.0.1:{plain.port}/metrics", timeout=PATIENCE).status_code == 404
    debug = httpx.get(f"http://127.0.0.1:{plain.debug_port}/debug/gangs", timeout=PATIENCE).json()
    assert {g["gang"] for g in debug["gangs"]} >= {"default/disagg-serve-0"}
    metrics = httpx.get(f"http://127.0.0.1:{plain.debug_port}/metrics", timeout=PATIENCE).text
    assert 'grove_extender_request_seconds_count{verb="filter"}' in metrics


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(b"", id="connects-and-says-nothing"),
        pytest.param(b"POST /filter HTTP/1.1\r\nHost: x\r\n", id="half-sent-headers"),
        pytest.param(
            b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
            + FILTER[:100],
            id="half-sent-body",
        ),
    ],
)
def test_a_request_that_never_finishes_arriving_is_closed(plain: Server, sent: bytes) -> None:
    with socket.create_connection(("127.0.0.1", plain.port), timeout=PATIENCE) as sock:
        sock.sendall(sent)
        assert closed_by_server(sock), "the server held the connection open"


def test_oversized_headers_and_bodies_are_refused_unread(plain: Server) -> None:
    with socket.create_connection(("127.0.0.1", plain.port), timeout=PATIENCE) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 70_000 + b"\r\n\r\n")
        assert sock.recv(64).startswith(b"HTTP/1.1 400")
    headers = {"content-type": "application/json", "content-length": "200000", "connection": "close"}
    with socket.create_connection(("127.0.0.1", plain.port), timeout=PATIENCE) as sock:
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        sock.sendall(f"POST /filter HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode())
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 413") and b"limit of 100000 bytes" in reply


def read_reply(sock: socket.socket) -> bytes:
    """What the server sent before closing; what arrived before a reset, if it reset the connection."""
    reply = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            reply += chunk
    return reply


FIELDS_REFUSED = f"request has more than {MAX_HEADER_FIELDS} header fields".encode()


@pytest.mark.parametrize(("more_fields", "status"), [(MAX_HEADER_FIELDS - 4, b"200"), (MAX_HEADER_FIELDS - 3, b"431")])
def test_a_request_of_more_header_fields_than_the_limit_is_refused_431(
    plain: Server, more_fields: int, status: bytes
) -> None:
    with socket.create_connection(("127.0.0.1", plain.port), timeout=PATIENCE) as sock:
        sock.sendall(filter_request(more_fields=more_fields))
        reply = read_reply(sock)
    assert reply.startswith(b"HTTP/1.1 " + status), reply[:200]
    assert reply.endswith(FIELDS_REFUSED) == (status == b"431"), reply[-200:]


def test_sixty_thousand_empty_header_fields_are_refused_and_the_connection_closed(plain: Server) -> None:
    with socket.create_connection(("127.0.0.1", plain.port), timeout=PATIENCE) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # refused before it was all sent
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + b"a:\r\n" * 60_000 + b"\r\n")
        reply = read_reply(sock)
    # A reset may overtake the answer when the server closes with the rest of the head unread: never a 200.
    assert reply == b"" or (reply.startswith(b"HTTP/1.1 431") and reply.endswith(FIELDS_REFUSED)), reply[:200]


def test_aborted_uploads_are_logged_quietly(plain: Server) -> None:
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", plain.port), timeout=PATIENCE) as sock:
            sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\n\r\n" + b"{" * 1000)
    # The server learns of each abort asynchronously: wait until all three were logged, then look at the whole log.
    deadline = time.monotonic() + PATIENCE
    while plain.log_text().count("client went away before its body arrived") < 3:
        assert time.monotonic() < deadline, plain.log_text()
        time.sleep(0.05)
    log = plain.log_text()
    assert "Traceback" not in log and " ERROR " not in log


# --- mTLS ---------------------------------------------------------------------------------------------------------


def client_context(pki: Pki, *, cert: Path | None, key: Path | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if cert and key:
        context.load_cert_chain(str(cert), str(key))
    return context


def filter_request(*, more_fields: int = 0) -> bytes:
    """A filter as kube-scheduler sends it (four header fields), with ``more_fields`` fields of no meaning added."""
    return (
        b"POST /filter HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + b"".join(b"X-Field-%d: x\r\n" % i for i in range(more_fields))
        + f"Content-Length: {len(FILTER)}\r\nConnection: close\r\n\r\n".encode()
        + FILTER
    )


def exchange(server: Server, context: ssl.SSLContext, request: bytes | None = None) -> bytes:
    """One filter (or ``request``) over TLS; whatever the server sent back before closing (b"" or an exception if
    refused)."""
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as sock,
    ):
        sock.sendall(filter_request() if request is None else request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


def test_a_client_with_the_schedulers_certificate_is_served(tls: Server, pki: Pki) -> None:
    reply = exchange(tls, client_context(pki, cert=pki.client_cert, key=pki.client_key))
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert len(json.loads(body)["NodeNames"]) == 1


def test_over_tls_too_a_request_of_more_header_fields_than_the_limit_is_refused_431(tls: Server, pki: Pki) -> None:
    context = client_context(pki, cert=pki.client_cert, key=pki.client_key)
    assert exchange(tls, context, filter_request(more_fields=MAX_HEADER_FIELDS - 4)).startswith(b"HTTP/1.1 200")
    reply = exchange(tls, context, filter_request(more_fields=MAX_HEADER_FIELDS - 3))
    assert reply.startswith(b"HTTP/1.1 431") and reply.endswith(FIELDS_REFUSED), reply


def reply_or_refusal(server: Server, context: ssl.SSLContext) -> bytes:
    """``exchange``, with a refusal in the handshake (TLS 1.2) or by the alert that follows it (TLS 1.3) read as no
    reply at all."""
    try:
        return exchange(server, context)
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return b""


STRANGERS = ["no-certificate", "certificate-of-another-ca"]


def stranger(pki: Pki, who: str) -> ssl.SSLContext:
    """A client context holding no certificate of our CA: none, or one of another CA."""
    cert, key = (None, None) if who == "no-certificate" else (pki.stranger_cert, pki.stranger_key)
    return client_context(pki, cert=cert, key=key)


@pytest.mark.parametrize("who", STRANGERS)
def test_a_client_without_a_certificate_of_our_ca_never_reaches_the_verbs(tls: Server, pki: Pki, who: str) -> None:
    assert reply_or_refusal(tls, stranger(pki, who)) == b"", "the server answered a client it could not authenticate"


def test_a_certificate_of_our_ca_naming_someone_else_is_refused_and_said_so(tls: Server, pki: Pki) -> None:
    reply = reply_or_refusal(tls, client_context(pki, cert=pki.intruder_cert, key=pki.intruder_key))
    assert reply == b"", "the server answered a client certificate without the scheduler's name"
    line = wait_for_log(tls, "reason=client_san")
    assert "client certificate carries someone-else; expected grove-scheduler (--client-san)" in line
    assert metric(tls, "client_san") >= 1


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(b"", id="connects-and-says-nothing"),
        # A ClientHello record's header and the start of its body, promising 512 bytes that never come.
        pytest.param(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"r" * 20, id="half-a-client-hello"),
    ],
)
def test_a_handshake_that_does_not_finish_is_closed_at_the_handshake_timeout(tls: Server, sent: bytes) -> None:
    before = metric(tls, "timeout")
    with socket.create_connection(("127.0.0.1", tls.port), timeout=PATIENCE) as sock:
        sock.sendall(sent)
        started = time.monotonic()
        assert closed_by_server(sock), "the server held the handshake open"
        held = time.monotonic() - started
    assert HANDSHAKE * 0.9 <= held < HANDSHAKE + 10, f"closed after {held:.2f} s, not at the {HANDSHAKE} s deadline"
    deadline = time.monotonic() + PATIENCE
    while metric(tls, "timeout") <= before:  # counted when the server closes, which the client may see first
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert "reason=timeout" in tls.log_text()


def test_the_handshake_timeout_is_10_seconds_unless_told_otherwise() -> None:
    args = build_parser().parse_args(["serve", "--snapshot", str(DEMO)])
    assert args.tls_handshake_timeout == DEFAULT_HANDSHAKE_TIMEOUT == 10.0
    assert "TLS handshake within 10 s" in (REPO_ROOT / "README.md").read_text()


class SilentClient:
    """A TLS client by hand over a plain socket: it reads what the server sends, but never answers its close_notify
    (the bytes it would send back are never written to the socket)."""

    def __init__(self, sock: socket.socket, context: ssl.SSLContext) -> None:
        self.sock = sock
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_hostname="localhost")
        while True:
            try:
                self.tls.do_handshake()
            except ssl.SSLWantReadError:
                self.sock.sendall(self.outgoing.read())
                self.incoming.write(self.sock.recv(65536))
            else:
                self.sock.sendall(self.outgoing.read())
                return

    def send(self, data: bytes) -> None:
        self.tls.write(data)
        self.sock.sendall(self.outgoing.read())

    def read_until_close_notify(self) -> bytes:
        """What the server sent up to its close_notify, which is read and left unanswered."""
        received = b""
        while raw := self.sock.recv(65536):
            self.incoming.write(raw)
            with contextlib.suppress(ssl.SSLWantReadError):
                while chunk := self.tls.read(65536):
                    received += chunk
                return received  # read() says close_notify by returning nothing
        raise AssertionError(f"the server closed without a close_notify after {received[:100]!r}")


def test_a_client_that_never_answers_close_notify_is_closed_within_the_close_timeout(tls: Server, pki: Pki) -> None:
    """The loop's own default would hold the socket long after the server closed it (a request deadline, an idle
    keep-alive; here a reply to ``Connection: close``)."""
    with socket.create_connection(("127.0.0.1", tls.port), timeout=PATIENCE) as sock:
        client = SilentClient(sock, client_context(pki, cert=pki.client_cert, key=pki.client_key))
        client.send(filter_request())
        reply = client.read_until_close_notify()
        notified = time.monotonic()
        assert closed_by_server(sock), "the server held the connection open"
        held = time.monotonic() - notified
    assert reply.startswith(b"HTTP/1.1 200")
    assert held < CLOSE_TIMEOUT + 10, f"closed {held:.2f} s after its close_notify, not within {CLOSE_TIMEOUT} s"


def handshakes(server: Server, protocol: str) -> float:
    """``grove_extender_tls_handshakes_total`` of the extender listener for clients that chose ``protocol``."""
    text = httpx.get(f"http://127.0.0.1:{server.debug_port}/metrics", timeout=PATIENCE).text
    prefix = f'grove_extender_tls_handshakes_total{{listener="extender",protocol="{protocol}"}} '
    return next((float(line.removeprefix(prefix)) for line in text.splitlines() if line.startswith(prefix)), 0.0)


def test_an_http2_client_sends_every_call_over_one_connection(tls: Server, pki: Pki) -> None:
    """kube-scheduler's client offers h2: its concurrent calls are streams of one connection, one handshake. A
    filter whose body spans several flow-control windows (10,000 more node names) is read whole."""
    h2_before, h1_before = handshakes(tls, "h2"), handshakes(tls, "http/1.1")
    request = json.loads(FILTER)
    large = json.dumps({**request, "NodeNames": [*request["NodeNames"], *(f"node-{i:05d}" for i in range(10_000))]})
    bind = json.dumps({"PodName": "nobody", "PodNamespace": "default", "PodUID": "u", "Node": "n"}).encode()
    context = client_context(pki, cert=pki.client_cert, key=pki.client_key)

    async def calls() -> list[httpx.Response]:
        async with httpx.AsyncClient(http2=True, verify=context, timeout=PATIENCE) as client:
            url = f"https://localhost:{tls.port}"
            # At once only what fits the connection's 64 KiB window: httpcore's client stalls when several bodies
            # wait for window together (pydantic/httpx2#1133); Go's, kube-scheduler's, does not.
            sent = [client.post(f"{url}/filter", content=FILTER) for _ in range(20)]
            sent += [client.post(f"{url}/bind", content=bind) for _ in range(20)]
            sent += [client.post(f"{url}/nothing-here", content=b"{}"), client.get(f"{url}/filter")]
            replies = list(await asyncio.gather(*sent))
            for _ in range(4):
                replies.append(await client.post(f"{url}/filter", content=large.encode()))
            return replies

    replies = asyncio.run(calls())
    filters, binds, others, larges = replies[:20], replies[20:40], replies[40:42], replies[42:]
    assert {reply.http_version for reply in replies} == {"HTTP/2"}
    assert [reply.status_code for reply in filters + binds + larges] == [200] * 44
    assert all(reply.json()["NodeNames"] == filters[0].json()["NodeNames"] for reply in filters + larges)
    assert len(filters[0].json()["NodeNames"]) == 1
    assert all("nobody" in reply.json()["Error"] for reply in binds)
    assert [reply.status_code for reply in others] == [404, 405]
    assert handshakes(tls, "h2") == h2_before + 1
    assert handshakes(tls, "http/1.1") == h1_before


def test_failed_handshakes_are_counted_by_reason(tls: Server, pki: Pki) -> None:
    before = metric(tls, "tls")
    # Refused in the handshake (TLS 1.2) or by the alert that follows it (TLS 1.3).
    with contextlib.suppress(ssl.SSLError, ConnectionResetError, BrokenPipeError):
        assert exchange(tls, client_context(pki, cert=pki.stranger_cert, key=pki.stranger_key)) == b""
    deadline = time.monotonic() + PATIENCE
    while metric(tls, "tls") <= before:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert "reason=tls" in tls.log_text()


def metric(server: Server, reason: str) -> float:
    """``grove_extender_tls_handshake_failures_total`` of the extender listener for ``reason`` (0 before any)."""
    text = httpx.get(f"http://127.0.0.1:{server.debug_port}/metrics", timeout=PATIENCE).text
    prefix = f'grove_extender_tls_handshake_failures_total{{listener="extender",reason="{reason}"}} '
    return next((float(line.removeprefix(prefix)) for line in text.splitlines() if line.startswith(prefix)), 0.0)


def wait_for_log(server: Server, needle: str) -> str:
    deadline = time.monotonic() + PATIENCE
    while True:
        found = [line for line in server.log_text().splitlines() if needle in line]
        if found:
            return found[-1]
        assert time.monotonic() < deadline, server.log_text()
        time.sleep(0.05)


def test_renewed_certificates_are_served_without_a_restart(tmp_path: Path) -> None:
    first = write_pki(tmp_path)
    tls_flags = ["--tls-cert", str(first.server_cert), "--tls-key", str(first.server_key), "--client-ca", str(first.ca)]
    server = _start(tmp_path, "renewing", *tls_flags, "--tls-reload-seconds", "0.2")
    try:
        assert exchange(server, client_context(first, cert=first.client_cert, key=first.client_key))
        renewed_dir = tmp_path / "renewed"
        renewed_dir.mkdir()
        renewed = write_pki(renewed_dir)
        with pytest.raises(ssl.SSLError):  # the server still presents the first CA's certificate
            exchange(server, client_context(renewed, cert=renewed.client_cert, key=renewed.client_key))
        # Rewritten in place, one file after the other: the server may meet a key that does not match its
        # certificate yet, and must keep serving until both are new.
        for source, target in (
            (renewed.server_cert, first.server_cert),
            (renewed.server_key, first.server_key),
            (renewed.ca, first.ca),
        ):
            target.write_bytes(source.read_bytes())
        # The server notices on its own schedule, and may first load a state in between (a new CA, the old pair):
        # what counts is that a client of the new CA is served without a restart.
        deadline = time.monotonic() + PATIENCE
        reply = b""
        while not reply:
            assert time.monotonic() < deadline, server.log_text()
            try:
                reply = exchange(server, client_context(renewed, cert=renewed.client_cert, key=renewed.client_key))
            except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
                time.sleep(0.1)
        assert reply.startswith(b"HTTP/1.1 200")
        assert "reloaded TLS files" in server.log_text()
    finally:
        _stop(server)
    assert "Traceback" not in server.log_text()


def test_plain_http_on_the_tls_port_gets_no_answer(tls: Server) -> None:
    with pytest.raises(httpx.HTTPError):
        httpx.post(f"http://127.0.0.1:{tls.port}/filter", content=FILTER, timeout=PATIENCE)


def test_the_kubelet_probes_without_a_certificate(tls: Server) -> None:
    assert httpx.get(f"http://127.0.0.1:{tls.probe_port}/readyz", timeout=PATIENCE).json() == {"ready": True}
    assert httpx.post(f"http://127.0.0.1:{tls.probe_port}/filter", content=FILTER, timeout=PATIENCE).status_code in (
        404,
        405,
    )


# --- flags ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        pytest.param(["--host", "0.0.0.0"], "steer scheduling", id="plain-on-all-addresses"),
        pytest.param(["--tls-cert", "c.pem"], "go together", id="cert-without-key"),
        pytest.param(["--client-ca", "ca.pem"], "needs --tls-cert", id="ca-without-cert"),
        pytest.param(["--debug-port", "8888"], "must differ", id="same-port-twice"),
        pytest.param(["--client-san", "grove-scheduler"], "needs --client-ca", id="client-san-without-ca"),
        pytest.param(["--tls-handshake-timeout", "0"], "must be positive", id="no-handshake-time"),
    ],
)
def test_unsafe_or_inconsistent_listener_flags_are_refused(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--snapshot", str(DEMO), *flags]) == 2
    assert said in capsys.readouterr().err


def test_an_unreadable_certificate_is_one_line_at_start_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "missing.pem")
    argv = ["serve", "--snapshot", str(DEMO), "--port", str(free_port()), "--tls-cert", missing, "--tls-key", missing]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [f"grove-extender serve: --tls-cert {missing}: No such file or directory"]
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    pki = write_pki(tmp_path)
    argv = [*argv[:-4], "--tls-cert", str(pki.server_cert), "--tls-key", str(key)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot load its TLS files" in err, err


@pytest.mark.parametrize(
    ("flags", "debug_host"),
    [
        pytest.param([], "127.0.0.1", id="default"),
        pytest.param(["--debug-host", "0.0.0.0"], "0.0.0.0", id="asked-for"),
    ],
)
def test_the_debug_port_listens_on_loopback_whatever_the_verbs_do(flags: list[str], debug_host: str) -> None:
    argv = ["serve", "--snapshot", str(DEMO), "--host", "0.0.0.0", "--allow-unauthenticated", "--debug-port", "9"]
    args = build_parser().parse_args([*argv, "--probe-port", "8", *flags])
    hosts = {listener.name: listener.host for listener in build_listeners(args, verbs=APP, probes=APP, debug=APP)}
    assert hosts == {"extender": "0.0.0.0", "probes": "0.0.0.0", "debug": debug_host}


async def APP(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app that is never called: the listeners are only built."""
    raise AssertionError("not served in this test")


def test_no_proxy_header_middleware_stands_between_uvicorn_and_the_app() -> None:
    """No proxy fronts the extender: uvicorn's ProxyHeadersMiddleware (on by default, trusting loopback) would scan
    every request's headers for X-Forwarded-* and let a local process rewrite the client address."""
    listener = Listener(name="extender", app=APP, host="127.0.0.1", port=free_port())
    config, _ = _config(listener, log_level="warning", timeouts=Timeouts(), registry=CollectorRegistry())
    assert config.loaded_app is APP


def test_no_websocket_upgrade_takes_a_connection_from_under_the_tls_gate() -> None:
    """The gate counts a connection until the protocol it handed the connection to loses it: an upgrade to a
    WebSocket protocol would swap that protocol and the connection would count for ever."""
    listener = Listener(name="extender", app=APP, host="127.0.0.1", port=free_port())
    config, _ = _config(listener, log_level="warning", timeouts=Timeouts(), registry=CollectorRegistry())
    assert config.ws_protocol_class is None
