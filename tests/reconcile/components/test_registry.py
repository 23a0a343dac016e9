"""The registry's table and orders agree: a component the orders forget would never run, a kind they name twice
would run twice."""

from __future__ import annotations

import random
from collections import Counter
from typing import get_args

from scheduler.reconcile.components.component import ComponentKind
from scheduler.reconcile.components.registry import AFTER_STATUS, CONVERGE, TEARDOWN, pcs_components
from scheduler.reconcile.memory_client import InMemoryApi
from scheduler.reconcile.rules.features import Features


def _registered() -> set[str]:
    api = InMemoryApi()
    components = pcs_components(
        api=api,
        clock=api.clock,
        rng=random.Random(0),
        scheduler_name="grove",
        initc_image="i",
        features=Features(mnnvl=True),
    )
    return set(components)


def test_mnnvls_component_is_registered_only_when_the_feature_is_on() -> None:
    # Grove's components/registry.go registers the ComputeDomain operator only when autoMNNVLEnabled.
    api = InMemoryApi()
    off = pcs_components(api=api, clock=api.clock, rng=random.Random(0), scheduler_name="grove", initc_image="i")
    assert "ComputeDomain" not in off and _registered() - set(off) == {"ComputeDomain"}


def test_every_component_runs_once_per_pass() -> None:
    runs = Counter(CONVERGE + AFTER_STATUS)
    assert set(runs) == _registered() == set(get_args(ComponentKind))
    assert max(runs.values()) == 1


def test_teardown_names_registered_kinds_once() -> None:
    assert set(TEARDOWN) <= _registered()
    assert len(set(TEARDOWN)) == len(TEARDOWN)
