"""Lifting Grove's gate: the last gate needs no precondition, so the extender's nomination of a gated pod, landing
between the pass's read and its lift, is no conflict."""

from __future__ import annotations

import random
from typing import Any

from scheduler.kube.memory.resources import PODS
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.memory_client import InMemoryApi
from tests.reconcile.examples import example


class _NominatedMeanwhile(InMemoryApi):
    """Before each lift, the pod's status is written as the extender's nomination would be."""

    def set_pod_scheduling_gates(
        self, namespace: str, name: str, *, gates: list[KubeObject], resource_version: str | None
    ) -> None:
        current = self.objects.get(("Pod", namespace, name))
        self.store.patch(PODS, current, {"status": {"nominatedNodeName": "n1"}}, subresource="status")
        super().set_pod_scheduling_gates(namespace, name, gates=gates, resource_version=resource_version)


def test_a_nomination_between_read_and_lift_does_not_fail_the_pass() -> None:
    api = _NominatedMeanwhile()
    api.apply(example("multinode-aggregated"))
    outcome = Reconciler(api, rng=random.Random(1)).reconcile("default", "multinode-aggregated")
    pods: list[dict[str, Any]] = [obj for (kind, *_), obj in api.objects.items() if kind == "Pod"]
    lifted = [p for p in pods if not p["spec"].get("schedulingGates")]
    # The base gang's 4 pods are lifted; the scaled gang's 4 wait for the base gang to be scheduled, as in Grove.
    assert outcome.errors == [] and (len(lifted), outcome.gated) == (4, 4)
    assert all(p["status"]["nominatedNodeName"] == "n1" for p in lifted)
