"""Nominations on the real control plane: the extender writes each planned pod's ``status.nominatedNodeName``
under the shipped RBAC, clears it when the gang loses its plan, kube-scheduler v1.36 binds the pods there, and the
API server clears the field at binding (so nothing is left to undo). After the extender is killed and replaced, no
pending pod keeps a nomination no plan backs; and the shipped ValidatingAdmissionPolicy lets the extender's account
write the nomination and refuses it any other field of a pod's status.

kube-scheduler is stopped while the gangs are created, so that what it would do cannot hide what the extender did.
"""

from __future__ import annotations

from typing import Any

from api.grove import SCHEDULER_API_PATH
from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.components import document
from benchmarks.controlplane.rest import Api
from benchmarks.controlplane.tokens import request_token
from benchmarks.controlplane.workload import Gang, create_gangs, pod_manifest
from tests.e2e.reads import pods, wait_for

POLICY = document("base/extender-status-policy.yaml", "ValidatingAdmissionPolicy", "grove-extender-nominations-only")


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


def _managers(pod: dict[str, Any]) -> set[str]:
    """Who owns a status field of ``pod``, as the API server records it."""
    return {m["manager"] for m in pod["metadata"].get("managedFields") or [] if m.get("subresource") == "status"}


def test_after_a_restart_no_pending_pod_keeps_a_nomination_no_plan_backs(
    control_plane: ControlPlane, namespace: str, figure: list[str]
) -> None:
    """The extender is SIGKILLed with its nominations on the pods, and one gang's PodGang is deleted while nothing
    runs that could clear them. The new process adopts what the API server says our field manager wrote: the gang
    that kept its PodGang is planned again and keeps (or moves) its nominations, the other's are cleared."""
    plane = control_plane
    assert plane.scheduler is not None and plane.extender is not None
    plane.scheduler.stop()
    try:
        create_gangs(plane.api, namespace, [Gang("stays", 8), Gang("goes", 8)])
        wait_for(lambda: len(_plans(plane, namespace)) == 2 and all(len(p) == 8 for p in _plans(plane, namespace)
                 .values()), timeout=60, what="both gangs planned ahead")  # fmt: skip
        plans = _plans(plane, namespace)
        wanted = {pod: node for plan in plans.values() for pod, node in plan.items()}
        wait_for(lambda: _nominations(plane, namespace) == wanted, timeout=60, what="every planned pod nominated")
        assert all(_managers(p) == {"grove-extender"} for p in pods(plane, namespace)), "written as ours"

        ports = plane.extender.ports
        plane.extender.child.stop(kill=True)
        plane.api.delete(f"{SCHEDULER_API_PATH}/namespaces/{namespace}/podgangs/goes")
        plane.start_extender(ports=ports)

        wait_for(lambda: all(_nominations(plane, namespace)[pod] == "" for pod in plans["goes"]), timeout=60,
                 what="the nominations no plan backs cleared by the new process")  # fmt: skip
        wait_for(lambda: len(_plans(plane, namespace).get("stays", {})) == 8, timeout=60, what="stays planned again")
        again = _plans(plane, namespace)["stays"]
        wait_for(lambda: {pod: node for pod, node in _nominations(plane, namespace).items() if pod in again}
                 == again, timeout=60, what="stays nominated where its new plan puts it")  # fmt: skip
        left = {pod: node for pod, node in _nominations(plane, namespace).items() if node and pod not in again}
        assert not left, f"nominations no plan backs: {left}"
    finally:
        plane.start_scheduler(wait=True)
    wait_for(lambda: _bound_on(pods(plane, namespace), "stays") == 8, timeout=60, what="the kept gang bound")
    moved = sum(1 for pod, node in again.items() if plans["stays"][pod] != node)
    figure.append(
        f"after a SIGKILL: 8 nominations no plan backed cleared by the new process; 8 backed again ({moved} moved)"
    )


def test_the_extenders_account_may_write_a_nomination_and_no_other_field_of_a_pods_status(
    control_plane: ControlPlane, namespace: str
) -> None:
    plane = control_plane
    body = pod_manifest(Gang("user", 1, gpus=0, member=False, scheduler="nobody"), "user-pod", namespace)
    plane.api.create(f"/api/v1/namespaces/{namespace}/pods", body)
    token = request_token(plane.api, namespace="grove-system", account="grove-extender")
    extender = Api(plane.server.url, token=token, ca=plane.server.keys.ca)
    path = f"/api/v1/namespaces/{namespace}/pods/user-pod/status?fieldManager=grove-extender"

    def patch(field: str, value: Any) -> Any:
        operation = [{"op": "add", "path": f"/status/{field}", "value": value}]
        return extender.request("PATCH", path, operation, content_type="application/json-patch+json")

    try:
        assert patch("nominatedNodeName", "gpu-node-0001").status == 200
        for field, value in [("conditions", [{"type": "Ready", "status": "True"}]), ("phase", "Running")]:
            refused = patch(field, value)
            assert refused.status == 403, (field, refused.body)
            assert POLICY["spec"]["validations"][0]["message"] in refused.body["message"]
        assert patch("nominatedNodeName", "").status == 200
    finally:
        extender.close()
