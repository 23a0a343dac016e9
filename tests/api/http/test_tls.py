"""``api.http.tls`` without sockets: whose certificate is accepted, and how failures are counted and logged
(rate-limited). The handshakes themselves, on real sockets, are in ``tests/api/http/test_serve_http.py``."""

from __future__ import annotations

import logging
import ssl
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from api.http.tls import LOG_INTERVAL, HandshakeGate, TlsConfig, client_refusal

Peercert = dict[str, Any]


def _cert(*names: tuple[str, str]) -> Peercert:
    return {"subject": ((("commonName", "grove-scheduler"),),), "subjectAltName": names}


@pytest.mark.parametrize(
    ("peercert", "allowed", "refused"),
    [
        pytest.param(_cert(("DNS", "grove-scheduler")), ("grove-scheduler",), None, id="dns-name"),
        pytest.param(_cert(("URI", "spiffe://c/ns/s")), ("spiffe://c/ns/s",), None, id="uri-name"),
        pytest.param(_cert(("DNS", "a"), ("DNS", "b")), ("x", "b"), None, id="any-of-several"),
        pytest.param(_cert(("DNS", "intruder")), ("grove-scheduler",), "carries intruder", id="another-name"),
        # The common name is what the certificate says about itself, not a name the CA vouched for here.
        pytest.param(_cert(), ("grove-scheduler",), "carries no DNS or URI name", id="common-name-only"),
        pytest.param(_cert(("IP Address", "grove-scheduler")), ("grove-scheduler",), "no DNS or URI", id="ip-san"),
        pytest.param(_cert(("DNS", "Grove-Scheduler")), ("grove-scheduler",), "carries Grove-Scheduler", id="case"),
        pytest.param(_cert(("DNS", "intruder")), (), None, id="no-names-asked"),
    ],
)
def test_a_client_certificate_must_name_one_of_the_allowed(
    peercert: Peercert, allowed: tuple[str, ...], refused: str | None
) -> None:
    reason = client_refusal(peercert, allowed)
    if refused is None:
        assert reason is None
    else:
        assert reason is not None and refused in reason and "--client-san" in reason


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _gate(clock: Clock, registry: CollectorRegistry) -> HandshakeGate:
    config = TlsConfig(cert="c.pem", key="k.pem", client_ca="ca.pem", client_sans=("grove-scheduler",))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    return HandshakeGate(listener="extender", config=config, context=context, registry=registry, clock=clock)


def _count(registry: CollectorRegistry, reason: str) -> float:
    value = registry.get_sample_value(
        "grove_extender_tls_handshake_failures_total", {"listener": "extender", "reason": reason}
    )
    return value or 0.0


def test_every_failure_is_counted_but_a_flood_logs_one_line_per_reason_and_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, registry = Clock(), CollectorRegistry()
    failures = _gate(clock, registry).failures
    with caplog.at_level(logging.WARNING, logger="api.http.tls"):
        for i in range(500):  # a scanner: 500 silent connections within one interval
            failures.record("timeout", client=("10.0.0.9", 40000 + i), detail="taking longer than 10 seconds")
        failures.record("client_san", client=("10.0.0.7", 1), detail="carries intruder")  # not hidden by the flood
        clock.now += LOG_INTERVAL
        failures.record("timeout", client=("10.0.0.9", 50000), detail="taking longer than 10 seconds")
    lines = [record.getMessage() for record in caplog.records]
    assert _count(registry, "timeout") == 501 and _count(registry, "client_san") == 1
    assert len(lines) == 3, lines
    assert "reason=timeout" in lines[0] and "client=10.0.0.9:40000" in lines[0] and "more" not in lines[0]
    assert "reason=client_san" in lines[1] and "carries intruder" in lines[1]
    assert (
        "client=10.0.0.9:50000" in lines[2]
        and f"(and 499 more for this reason in the last {LOG_INTERVAL:g}s)" in (lines[2])
    )
