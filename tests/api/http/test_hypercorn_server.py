"""``serve --http-server hypercorn``: the same apps on hypercorn, the maintained server the hand-written listener is
measured against (``benchmarks/bench_http2.py``, ``bench_e2e --real --http-servers``). What the comparison relies on
is held here: hypercorn serves the verbs over mTLS with HTTP/2 and HTTP/1.1, refuses a client the CA did not sign,
and says that it does not check a certificate's names."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from api.http.hypercorn_server import serve_with_hypercorn
from api.http.server import Listener, ServeError
from api.http.tls import TlsConfig
from tests.api.http.test_serve_http import (
    FILTER,
    PATIENCE,
    STRANGERS,
    Pki,
    Server,
    _start,
    _stop,
    client_context,
    exchange,
    reply_or_refusal,
    stranger,
    wait_for_log,
    write_pki,
)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return write_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def hypercorn(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[Server]:
    server = _start(
        tmp_path_factory.mktemp("hypercorn"),
        "hypercorn",
        "--http-server",
        "hypercorn",
        "--tls-cert",
        str(pki.server_cert),
        "--tls-key",
        str(pki.server_key),
        "--client-ca",
        str(pki.ca),
    )
    yield server
    _stop(server)


def test_the_verbs_are_served_over_mtls_with_http2_and_http1(hypercorn: Server, pki: Pki) -> None:
    context = client_context(pki, cert=pki.client_cert, key=pki.client_key)

    async def calls() -> list[httpx.Response]:
        async with httpx.AsyncClient(http2=True, verify=context, timeout=PATIENCE) as client:
            url = f"https://localhost:{hypercorn.port}"
            return list(await asyncio.gather(*(client.post(f"{url}/filter", content=FILTER) for _ in range(10))))

    replies = asyncio.run(calls())
    assert {reply.http_version for reply in replies} == {"HTTP/2"}
    assert [reply.status_code for reply in replies] == [200] * 10
    assert all(len(reply.json()["NodeNames"]) == 1 for reply in replies)
    offering_no_protocol = client_context(pki, cert=pki.client_cert, key=pki.client_key)  # httpx set h2 on the other
    head, _, body = exchange(hypercorn, offering_no_protocol).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert len(json.loads(body)["NodeNames"]) == 1


@pytest.mark.parametrize("who", STRANGERS)
def test_a_client_the_ca_did_not_sign_never_reaches_the_verbs(hypercorn: Server, pki: Pki, who: str) -> None:
    assert reply_or_refusal(hypercorn, stranger(pki, who)) == b"", "hypercorn answered a client it could not trust"


def test_it_says_that_client_certificates_names_go_unchecked(hypercorn: Server) -> None:
    line = wait_for_log(hypercorn, "does not check client certificates' names")
    assert "client_sans=grove-scheduler" in line


def test_without_hypercorn_installed_serving_stops_before_it_starts_and_says_how(
    monkeypatch: pytest.MonkeyPatch, pki: Pki
) -> None:
    monkeypatch.setitem(sys.modules, "hypercorn.config", None)  # what an import of a missing package meets
    tls = TlsConfig(cert=str(pki.server_cert), key=str(pki.server_key), client_ca=str(pki.ca))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("nothing is served without hypercorn")

    listener = Listener(name="extender", app=app, host="127.0.0.1", port=1, tls=tls)
    with pytest.raises(ServeError, match=r"pip install 'grove-extender\[bench\]'"):
        serve_with_hypercorn([listener], log_level="warning")
