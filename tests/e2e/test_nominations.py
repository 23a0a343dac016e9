"""Nominations on the real control plane: the extender writes each planned pod's ``status.nominatedNodeName``
under the shipped RBAC, clears it when the gang loses its plan, kube-scheduler v1.36 binds the pods there, and the
API server clears the field at binding (so nothing is left to undo).

kube-scheduler is stopped while the gangs are created, so that what it would do cannot hide what the extender did.
"""

from __future__ import annotations

from typing import Any

from api.grove import SCHEDULER_API_PATH
from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.workload import Gang, create_gangs
from tests.e2e.reads import pods, wait_for


def _nominations(plane: ControlPlane, namespace: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["status"].get("nominatedNodeName", "") for p in pods(plane, namespace)}


def _plans(plane: ControlPlane, namespace: str) -> dict[str, dict[str, str]]:
    """Gang name → its plan (pod name → node), as the extender's /debug/gangs shows it."""
    assert plane.extender is not None
    found: dict[str, dict[str, str]] = {}
    for gang in plane.extender.gangs():
        space, name = gang["gang"].split("/", 1)
        if space == namespace:
            found[name] = {pod.split("/", 1)[1]: node for pod, node in gang["plan"].items()}
    return found


def test_planned_pods_are_nominated_cleared_with_their_plan_and_bound_where_nominated(
    control_plane: ControlPlane, namespace: str, figure: list[str]
) -> None:
    plane = control_plane
    assert plane.scheduler is not None
    plane.scheduler.stop()
    try:
        create_gangs(plane.api, namespace, [Gang("keep", 8), Gang("lose", 8)])
        wait_for(lambda: {len(p) for p in _plans(plane, namespace).values()} == {8} and len(_plans(plane, namespace))
                 == 2, timeout=60, what="both gangs planned ahead")  # fmt: skip
        plans = _plans(plane, namespace)
        wanted = {pod: node for plan in plans.values() for pod, node in plan.items()}
        wait_for(lambda: _nominations(plane, namespace) == wanted, timeout=60,
                 what="every planned pod nominated to its planned node")  # fmt: skip

        # The gang loses its plan (its PodGang deleted): its pods must not keep pointing kube-scheduler (and its
        # nominator's accounting) at nodes the gang no longer holds.
        plane.api.delete(f"{SCHEDULER_API_PATH}/namespaces/{namespace}/podgangs/lose")
        wait_for(lambda: all(_nominations(plane, namespace)[pod] == "" for pod in plans["lose"]), timeout=60,
                 what="the unplanned gang's nominations cleared")  # fmt: skip
        assert {pod: node for pod, node in _nominations(plane, namespace).items() if pod.startswith("keep-")} == {
            pod: node for pod, node in wanted.items() if pod.startswith("keep-")
        }, "the other gang's nominations stand"
    finally:
        plane.start_scheduler(wait=True)

    wait_for(lambda: _bound_on(pods(plane, namespace), "keep") == 8, timeout=60, what="the kept gang bound")
    bound = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods(plane, namespace) if p["spec"].get("nodeName")}
    assert {pod: bound[pod] for pod in plans["keep"]} == plans["keep"], "bound where nominated"
    assert all(_nominations(plane, namespace)[pod] == "" for pod in plans["keep"]), "cleared at binding"
    figure.append(f"{len(wanted)} pods nominated ahead; 8 cleared with their gang's plan; 8 bound where nominated")


def _bound_on(found: list[dict[str, Any]], gang: str) -> int:
    return sum(1 for p in found if p["metadata"]["name"].startswith(f"{gang}-") and p["spec"].get("nodeName"))
