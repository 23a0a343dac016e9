"""Preemption on full nodes never breaks a bound gang below ``minReplicas``: neither for a high-priority pod of the
cluster's own kube-scheduler (profile ``default-scheduler``, with the extender entry of
``deploy/components/preempt-guard/default-scheduler-preempt-guard.yaml`` copied into its configuration as that file
says) nor for one of the ``grove`` profile. And it still
preempts where no gang is at stake: a lone low-priority pod is evicted as usual.

The scenario has a pool of three tainted nodes of its own (4 GPUs each), so nothing else lands there: a gang of 8
one-GPU pods fills two of them, a lone pod the third.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.nodes import NodeSpec, create_nodes
from benchmarks.controlplane.workload import Gang, create_gangs
from tests.e2e.reads import bound, pods, wait_for

POOL = ("e2e-pool", "preempt")
LOW, HIGH = "e2e-low", "e2e-high"


@pytest.fixture
def pool(control_plane: ControlPlane) -> Iterator[list[str]]:
    names = [f"preempt-{i}" for i in range(3)]
    taint = {"key": POOL[0], "value": POOL[1], "effect": "NoSchedule"}
    specs = [NodeSpec(n, {"kubernetes.io/hostname": n, POOL[0]: POOL[1]}, taints=(taint,)) for n in names]
    create_nodes(control_plane.api, specs)
    for name, value in ((LOW, 100), (HIGH, 1_000_000)):
        if control_plane.api.find(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}") is None:
            body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                    "value": value}  # fmt: skip
            control_plane.api.create("/apis/scheduling.k8s.io/v1/priorityclasses", body)
    scheduler = control_plane.start_default_scheduler()
    try:
        yield names
    finally:
        scheduler.stop()
        for name in names:
            control_plane.api.delete(f"/api/v1/nodes/{name}")


def _in_pool(name: str, size: int, *, gpus: int, priority: str, scheduler: str, member: bool) -> Gang:
    return Gang(name, size, gpus=gpus, priority_class=priority, scheduler=scheduler, member=member,
                node_selector=(POOL,), tolerations=(POOL,))  # fmt: skip


def _by_name(plane: ControlPlane, namespace: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in pods(plane, namespace)}


def _bound(plane: ControlPlane, namespace: str, name: str) -> bool:
    pod = _by_name(plane, namespace).get(name)
    return pod is not None and bound(pod)


def test_preemption_on_full_nodes_spares_bound_gangs_and_still_evicts_a_lone_pod(
    control_plane: ControlPlane, namespace: str, pool: list[str]
) -> None:
    plane = control_plane
    gang = _in_pool("gang", 8, gpus=1, priority=LOW, scheduler="grove", member=True)
    create_gangs(plane.api, namespace, [gang])
    wait_for(lambda: sum(bound(p) for p in pods(plane, namespace)) == 8, timeout=60, what="the gang bound")
    lone = _in_pool("lone", 1, gpus=4, priority=LOW, scheduler="default-scheduler", member=False)
    create_gangs(plane.api, namespace, [lone])
    wait_for(lambda: _bound(plane, namespace, "lone-0"), timeout=60, what="the lone pod bound on the third node")
    gang_uids = {n: p["metadata"]["uid"] for n, p in _by_name(plane, namespace).items() if n.startswith("gang-")}

    # 1. Where no gang is at stake, the default scheduler preempts as usual: the lone pod makes way.
    create_gangs(plane.api, namespace, [_in_pool("first", 1, gpus=4, priority=HIGH, scheduler="default-scheduler",
                                                 member=False)])  # fmt: skip
    wait_for(lambda: _bound(plane, namespace, "first-0") and "lone-0" not in _by_name(plane, namespace), timeout=90,
             what="the lone pod preempted and the first high-priority pod bound")  # fmt: skip

    # 2. Now every GPU of the pool is held by the gang (low) or the first preemptor (high): the only victims left
    # are gang members. Neither profile may take one.
    create_gangs(plane.api, namespace, [
        _in_pool("default", 1, gpus=1, priority=HIGH, scheduler="default-scheduler", member=False),
        _in_pool("grove", 1, gpus=1, priority=HIGH, scheduler="grove", member=False),
    ])  # fmt: skip

    def attempted() -> bool:
        """Both preemptors were found unschedulable (and so went through preemption) at least once."""
        listed = _by_name(plane, namespace)
        return all(
            any(
                c.get("reason") == "Unschedulable"
                for c in (listed.get(n) or {}).get("status", {}).get("conditions", [])
            )
            for n in ("default-0", "grove-0")
        )

    wait_for(attempted, timeout=60, what="both preemptors tried and found unschedulable")
    time.sleep(10)  # kube-scheduler retries an unschedulable pod on cluster events; give preemption its chances
    listed = _by_name(plane, namespace)
    now = {n: p["metadata"]["uid"] for n, p in listed.items() if n.startswith("gang-")}
    assert now == gang_uids and all(bound(listed[n]) for n in now), "a gang member was preempted"
    assert not any(listed[n]["metadata"].get("deletionTimestamp") for n in now)
    for name in ("default-0", "grove-0"):
        assert not bound(listed[name]) and not listed[name]["status"].get("nominatedNodeName"), listed[name]["status"]
    assert plane.extender is not None
    metrics = plane.extender.metrics().splitlines()
    vetoes = [line for line in metrics if line.startswith("grove_extender_preemption_vetoes_total")]
    assert vetoes and float(vetoes[0].split()[-1]) >= 2, vetoes
