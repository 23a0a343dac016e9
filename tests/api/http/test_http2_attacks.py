"""HTTP/2 attacks by a client holding a valid certificate, each for ``ATTACK_SECONDS`` against ``serve`` over mTLS
(``benchmarks/h2_attacks.py`` runs them), while a legitimate client calls filter every 50 ms: the server stays up,
the legitimate calls keep their 99th percentile within a second during the attack and answer within a second right
after it, the server's memory grows by less than 100 MB, the attacker's connections end with GOAWAY
``ENHANCE_YOUR_CALM`` (or, for a client that reads nothing, are closed), and the server says so in its log."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.bench_h2_attacks import FILTER, Served, serving
from benchmarks.h2_attacks import ATTACKS, NEVER_READS, Legitimate, measure, percentile

ATTACK_SECONDS = 10.0
P99_SECONDS = 1.0
RSS_GROWTH_BYTES = 100 * 2**20


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Legitimate]]:
    # A request timeout shorter than the attack, so the zero-window attack meets its send deadline within it.
    with serving(tmp_path_factory.mktemp("attacked"), "--request-timeout", "2") as server:
        legitimate = Legitimate(f"https://localhost:{server.port}", server.scheduler, FILTER).start()
        try:
            yield server, legitimate
        finally:
            legitimate.stop()


@pytest.mark.parametrize("kind", ATTACKS)
def test_an_attack_leaves_the_legitimate_calls_served_and_ends_the_attackers_connections(
    kind: str, served: tuple[Served, Legitimate]
) -> None:
    server, legitimate = served
    outcome = measure(
        kind,
        port=server.port,
        pid=server.process.pid,
        certificates=server.scheduler,
        seconds=ATTACK_SECONDS,
        legitimate=legitimate,
    )
    print(outcome.line())
    assert server.process.poll() is None, f"serve died:\n{server.log_text()[-3000:]}"
    assert len(outcome.during) >= 10, "the legitimate client made almost no calls: see its failures"
    assert percentile(outcome.during, 0.99) <= P99_SECONDS, outcome.line()
    assert outcome.after and max(outcome.after) <= P99_SECONDS, outcome.line()
    assert outcome.rss_peak - outcome.rss_before < RSS_GROWTH_BYTES, outcome.line()
    attacked = outcome.attacked
    if kind in NEVER_READS:
        assert attacked.closed >= 1, outcome.line()
    else:
        assert attacked.goaways.get("ENHANCE_YOUR_CALM", 0) >= 1, outcome.line()
    assert "ending an HTTP/2 connection" in server.log_text()
