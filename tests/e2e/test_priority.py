"""Gang priority and preemption on the real control plane, as issue 28 tells it: two racks full of low-priority
gangs (18 gangs of 8 one-GPU pods, bound), then a gang of higher priority. The priority class is on the PodGangs
only, as Grove puts it (their pods carry none, so kube-scheduler sees them all at priority 0 and its own preemption
finds nothing to do): the extender decides from the PodGangs' classes.

The pool is two NVLink domains of 18 nodes × 4 GPUs of its own, tainted, so nothing else lands there. The kubelet
stand-in deletes an evicted pod once its (stand-in) containers stop, as a kubelet does after a graceful delete; the
disruption-controller stand-in keeps PodDisruptionBudgets' status as kube-controller-manager would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.nodes import NodeSpec, create_nodes
from benchmarks.controlplane.workload import Gang, create_gangs
from tests.e2e.reads import apply_in, bound, condition, load_average, podgangs, pods, wait_for

POOL = ("e2e-pool", "priority")
CLIQUE = "nvidia.com/gpu.clique"
RACKS, PER_RACK = 2, 18
LOW, HIGH, CALM = "e2e-prio-low", "e2e-prio-high", "e2e-prio-calm"
CLASSES = ((LOW, 100, "PreemptLowerPriority"), (HIGH, 100_000, "PreemptLowerPriority"), (CALM, 100_000, "Never"))
EVENTS = "/api/v1/namespaces/{ns}/events"


@pytest.fixture(scope="module")
def pool(control_plane: ControlPlane) -> Iterator[list[str]]:
    names = [f"prio-r{r}-{i:02d}" for r in range(RACKS) for i in range(PER_RACK)]
    taint = {"key": POOL[0], "value": POOL[1], "effect": "NoSchedule"}
    specs = [
        NodeSpec(n, {"kubernetes.io/hostname": n, POOL[0]: POOL[1], CLIQUE: f"e2e-prio.{n.split('-')[1]}"},
                 taints=(taint,))
        for n in names
    ]  # fmt: skip
    create_nodes(control_plane.api, specs)
    for name, value, policy in CLASSES:
        if control_plane.api.find(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}") is None:
            body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                    "value": value, "preemptionPolicy": policy}  # fmt: skip
            control_plane.api.create("/apis/scheduling.k8s.io/v1/priorityclasses", body)
    try:
        yield names
    finally:
        for name in names:
            control_plane.api.delete(f"/api/v1/nodes/{name}")


def _gang(name: str, size: int, priority: str, *, required: str | None = None) -> Gang:
    return Gang(name, size, gpus=1, priority_class=priority, class_on_pods=False, required=required,
                node_selector=(POOL,), tolerations=(POOL,))  # fmt: skip


def _by_gang(plane: ControlPlane, namespace: str) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for pod in pods(plane, namespace):
        gang = pod["metadata"].get("labels", {}).get("grove.io/podgang", "")
        found.setdefault(gang, []).append(pod)
    return found


def _fill(plane: ControlPlane, namespace: str, *, min_replicas: int | None = None) -> list[Gang]:
    lows = [_gang(f"low-{i:02d}", 8, LOW) for i in range(RACKS * PER_RACK * 4 // 8)]
    create_gangs(plane.api, namespace, lows, min_replicas=min_replicas)
    total = sum(g.size for g in lows)
    wait_for(lambda: sum(bound(p) for p in pods(plane, namespace)) == total, timeout=120,
             what=f"all {total} low-priority pods bound")  # fmt: skip
    return lows


def _broken(plane: ControlPlane, namespace: str, gangs: list[Gang], *, minimum: int = 8) -> list[str]:
    """Gangs with some members bound but fewer than ``minimum``."""
    by_gang = _by_gang(plane, namespace)
    counts = {g.name: sum(bound(p) for p in by_gang.get(g.name, [])) for g in gangs}
    return [f"{name}: {n} of {minimum}" for name, n in counts.items() if 0 < n < minimum]


def test_a_high_priority_gang_on_full_racks_evicts_one_whole_low_gang_and_binds_whole(
    control_plane: ControlPlane, namespace: str, pool: list[str], figure: list[str]
) -> None:
    plane = control_plane
    lows = _fill(plane, namespace)
    load = load_average()
    started = time.monotonic()
    create_gangs(plane.api, namespace, [_gang("high", 8, HIGH, required=CLIQUE)])
    wait_for(lambda: sum(bound(p) for p in _by_gang(plane, namespace).get("high", [])) == 8, timeout=60,
             what="the high-priority gang bound whole",
             show=lambda: condition(next(g for g in podgangs(plane, namespace) if g["metadata"]["name"] == "high"),
                                    "Scheduled"))  # fmt: skip
    seconds = time.monotonic() - started
    figure.append(f"high-priority gang of 8 bound whole {seconds:.1f} s after its creation (load {load})")
    assert seconds <= 30, f"the gang took {seconds:.1f} s"
    # Exactly one low gang went, whole; every other is untouched; none is left below its minimum.
    wait_for(lambda: not _broken(plane, namespace, lows), timeout=30, what="no low gang partly bound",
             show=lambda: _broken(plane, namespace, lows))  # fmt: skip
    by_gang = _by_gang(plane, namespace)
    gone = [g.name for g in lows if not any(bound(p) for p in by_gang.get(g.name, []))]
    assert len(gone) == 1, gone
    assert all(sum(bound(p) for p in by_gang[g.name]) == 8 for g in lows if g.name not in gone)
    victim = gone[0]
    events = plane.api.items(EVENTS.format(ns=namespace))
    preempted = [e for e in events if e["reason"] == "Preempted" and e["involvedObject"]["kind"] == "Pod"]
    assert {e["involvedObject"]["name"] for e in preempted} == {f"{victim}-{i}" for i in range(8)}
    assert all("PodGang " + namespace + "/high" in e["message"] for e in preempted)
    status = next(g for g in podgangs(plane, namespace) if g["metadata"]["name"] == victim)
    assert (condition(status, "Scheduled") or {}).get("reason") == "Preempted", status.get("status")

    # A gang of the same priority that may not preempt (preemptionPolicy: Never) waits, and evicts nothing.
    create_gangs(plane.api, namespace, [_gang("calm", 8, CALM)])
    time.sleep(15)
    by_gang = _by_gang(plane, namespace)
    assert not any(bound(p) for p in by_gang.get("calm", []))
    assert sum(1 for g in lows if any(bound(p) for p in by_gang.get(g.name, []))) == len(lows) - 1
    assert not _broken(plane, namespace, lows)


def _serving(name: str, priority: str) -> dict[str, Any]:
    """A PodCliqueSet as a user writes it: one clique of 8 one-GPU pods in the pool, the class on the template."""
    pod_spec = {
        "schedulerName": "grove",
        "nodeSelector": {POOL[0]: POOL[1]},
        "tolerations": [{"key": POOL[0], "operator": "Equal", "value": POOL[1], "effect": "NoSchedule"}],
        "containers": [{"name": "server", "image": "nvcr.io/nvidia/tritonserver:25.01-py3",
                        "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"},
                                      "limits": {"nvidia.com/gpu": "1"}}}],
    }  # fmt: skip
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "template": {
                "priorityClassName": priority,
                "cliques": [{"name": "server", "spec": {"roleName": "server", "replicas": 8, "podSpec": pod_spec}}],
            },
        },
    }


def test_a_podcliquesets_priority_class_flows_through_the_reconciler_to_the_decision(
    control_plane: ControlPlane, namespace: str, pool: list[str], figure: list[str]
) -> None:
    # The same full racks; this time the high-priority workload is a PodCliqueSet, as a user applies it. The
    # reconciler puts its class on the PodGang (not on the pods); the extender reads it there and makes room.
    plane = control_plane
    lows = _fill(plane, namespace)
    started = time.monotonic()
    apply_in(plane, namespace, [_serving("serving", HIGH)])
    gang = wait_for(lambda: next((g for g in podgangs(plane, namespace) if g["metadata"]["name"] == "serving-0"), None),
                    timeout=60, what="the reconciler made the PodGang")  # fmt: skip
    assert gang["spec"].get("priorityClassName") == HIGH
    serving = lambda: [p for p in pods(plane, namespace) if p["metadata"]["name"].startswith("serving-0-")]  # noqa: E731
    wait_for(lambda: len(serving()) == 8, timeout=60, what="the reconciler made the pods")
    assert not any(p["spec"].get("priorityClassName") for p in serving()), "Grove puts no class on its pods"
    wait_for(lambda: sum(bound(p) for p in serving()) == 8, timeout=90, what="the PodCliqueSet's pods bound whole")
    figure.append(f"PodCliqueSet of 8 bound whole {time.monotonic() - started:.1f} s after kubectl apply")
    wait_for(lambda: not _broken(plane, namespace, lows), timeout=30, what="no low gang partly bound",
             show=lambda: _broken(plane, namespace, lows))  # fmt: skip
    by_gang = _by_gang(plane, namespace)
    assert sum(1 for g in lows if not any(bound(p) for p in by_gang.get(g.name, []))) == 1


def test_disruption_budgets_leave_extras_only_and_a_gang_that_needs_more_waits(
    control_plane: ControlPlane, namespace: str, pool: list[str], figure: list[str]
) -> None:
    # The racks full again, every low gang now of minReplicas 6 (2 best-effort pods) behind a PodDisruptionBudget of
    # minAvailable 6: each allows 2 evictions. A high gang of 8 in one NVLink domain: no whole gang may go (its
    # budget), so 2 pods of each of 4 gangs of one rack go, each left at its minimum, still running.
    plane = control_plane
    lows = _fill(plane, namespace, min_replicas=6)
    for gang in lows:
        body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": gang.name},
                "spec": {"minAvailable": 6, "selector": {"matchLabels": {"grove.io/podgang": gang.name}}}}  # fmt: skip
        plane.api.create(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets", body)
    budgets = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
    wait_for(lambda: all((b.get("status") or {}).get("disruptionsAllowed") == 2 for b in plane.api.items(budgets)),
             timeout=60, what="every budget allows 2 (the disruption controller's status)")  # fmt: skip
    started = time.monotonic()
    create_gangs(plane.api, namespace, [_gang("high", 8, HIGH, required=CLIQUE)])
    wait_for(lambda: sum(bound(p) for p in _by_gang(plane, namespace).get("high", [])) == 8, timeout=60,
             what="the high-priority gang bound whole")  # fmt: skip
    figure.append(f"high gang of 8 bound whole on extras alone {time.monotonic() - started:.1f} s after creation")
    by_gang = _by_gang(plane, namespace)
    running = {g.name: sum(bound(p) for p in by_gang.get(g.name, [])) for g in lows}
    assert sorted(running.values()).count(6) == 4 and sorted(running.values()).count(8) == len(lows) - 4, running
    assert not _broken(plane, namespace, lows, minimum=6)

    # A gang of 32: the extras left (2 in each of the 14 gangs still at 8: 28 GPUs) are not enough, four whole
    # gangs would be, but no budget lets a whole gang go, and taking more of a gang than its extras would leave it
    # below its minimum: it waits, and nothing more is evicted.
    create_gangs(plane.api, namespace, [_gang("wide", 32, HIGH)])
    time.sleep(15)
    by_gang = _by_gang(plane, namespace)
    assert not any(bound(p) for p in by_gang.get("wide", []))
    assert {g.name: sum(bound(p) for p in by_gang.get(g.name, [])) for g in lows} == running
