"""Startup order and gang termination on the real control plane, observed through the pods' status.

The kubelet stand-in runs ``grove-initc`` for real and makes a pod Ready one second after its containers start,
so a pod that waited for its parents becomes Ready after them, and one that did not wait would be Ready with them.
"""

from __future__ import annotations

import time
from typing import Any

import yaml

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.install import DEPLOY
from tests.e2e.reads import all_whole, apply_in, bound, pods, ready, wait_for

EXAMPLES = DEPLOY / "examples"


def _clique(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["labels"]["grove.io/podclique"])


def test_each_clique_becomes_ready_only_after_the_cliques_it_starts_after(
    control_plane: ControlPlane, namespace: str
) -> None:
    (pcs,) = yaml.safe_load_all((EXAMPLES / "training-scaled.yaml").read_text())
    pcs["spec"]["replicas"] = 1  # parameter-server (in group replica 0) → coordinator → workers of replica 0
    apply_in(control_plane, namespace, [pcs])
    first_ready: dict[str, float] = {}  # clique → when its first pod was seen Ready (polled every 0.1 s)
    last_ready: dict[str, float] = {}
    deadline = time.monotonic() + 120
    expected = {"training-0-workers-0-parameter-server", "training-0-coordinator", "training-0-workers-0-worker"}
    while not expected <= last_ready.keys() and time.monotonic() < deadline:
        listed = pods(control_plane, namespace)
        now = time.monotonic()
        by_clique: dict[str, list[bool]] = {}
        for pod in listed:
            by_clique.setdefault(_clique(pod), []).append(ready(pod))
        for clique, flags in by_clique.items():
            if any(flags):
                first_ready.setdefault(clique, now)
            if all(flags):
                last_ready.setdefault(clique, now)
        time.sleep(0.1)
    assert expected <= last_ready.keys(), f"never all Ready: {sorted(expected - last_ready.keys())}"
    parameter_server = last_ready["training-0-workers-0-parameter-server"]
    coordinator = first_ready["training-0-coordinator"]
    worker = first_ready["training-0-workers-0-worker"]
    # Each waits for its parent's minAvailable (1) Ready pod, then takes its own second to become Ready.
    assert coordinator >= parameter_server + 0.5, (parameter_server, coordinator)
    assert worker >= last_ready["training-0-coordinator"] + 0.5, (last_ready["training-0-coordinator"], worker)
    assert all_whole(control_plane, namespace, expected_gangs=3)


def test_a_breached_group_replica_is_recycled_after_termination_delay_and_binds_whole_again(
    control_plane: ControlPlane, namespace: str
) -> None:
    (pcs,) = yaml.safe_load_all((EXAMPLES / "multinode-aggregated.yaml").read_text())
    delay = 8
    pcs["spec"]["template"]["terminationDelay"] = f"{delay}s"
    apply_in(control_plane, namespace, [pcs])
    group = "multinode-aggregated-0-model-instance"
    wait_for(
        lambda: (
            all_whole(control_plane, namespace, expected_gangs=2) and all(map(ready, pods(control_plane, namespace)))
        ),
        timeout=60,
        what="both instances bound and Ready",
    )
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(control_plane, namespace)}
    workers = sorted(n for n in before if n.startswith(f"{group}-0-worker-"))
    assert control_plane.kubelet is not None
    crashed_at = time.monotonic()
    for name in workers[:2]:  # 1 of 3 workers left: below the clique's minAvailable (3)
        control_plane.kubelet.crash(namespace, name)

    def replaced() -> list[dict[str, Any]] | None:
        listed = [p for p in pods(control_plane, namespace) if p["metadata"]["uid"] not in before.values()]
        return listed or None

    fresh = wait_for(replaced, timeout=delay + 30, what="the breached instance recycled")
    recycled_after = time.monotonic() - crashed_at
    assert recycled_after >= delay - 1, f"recycled {recycled_after:.1f} s after the breach, before terminationDelay"
    assert {_clique(p) for p in fresh} <= {f"{group}-0-leader", f"{group}-0-worker"}
    wait_for(
        lambda: (
            all_whole(control_plane, namespace, expected_gangs=2)
            and len([p for p in pods(control_plane, namespace) if bound(p)]) == 8
        ),
        timeout=60,
        what="instance 0 recreated and both gangs whole again",
    )
    # Instance 1 kept its group's minAvailable healthy: only the breached replica was recycled.
    now = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(control_plane, namespace)}
    assert {n: u for n, u in before.items() if n.startswith(f"{group}-1-")}.items() <= now.items()
