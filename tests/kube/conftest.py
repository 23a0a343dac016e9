"""Fixtures for the Kubernetes-facing code: a fake API server (modules override ``fake`` to seed it) and the real
client pointed at it through a kubeconfig file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from benchmarks.sim.fakeapi import FakeApiServer, connected, running


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    with running() as server:
        yield server


@pytest.fixture
def api_client(fake: FakeApiServer, tmp_path: Path) -> Iterator[ApiClient]:
    with connected(fake, tmp_path) as client:
        yield client
