"""The registry's table and orders agree: a component the orders forget would never run, a kind they name twice
would run twice."""

from __future__ import annotations

import random
from collections import Counter
from typing import get_args

from scheduler.reconcile.components.component import ComponentKind
from scheduler.reconcile.components.registry import AFTER_STATUS, CONVERGE, TEARDOWN, pcs_components
from scheduler.reconcile.memory_client import InMemoryApi


def _registered() -> set[str]:
    api = InMemoryApi()
    components = pcs_components(api=api, clock=api.clock, rng=random.Random(0), scheduler_name="grove", initc_image="i")
    return set(components)


def test_every_component_runs_once_per_pass() -> None:
    runs = Counter(CONVERGE + AFTER_STATUS)
    assert set(runs) == _registered() == set(get_args(ComponentKind))
    assert max(runs.values()) == 1


def test_teardown_names_registered_kinds_once() -> None:
    assert set(TEARDOWN) <= _registered()
    assert len(set(TEARDOWN)) == len(TEARDOWN)
