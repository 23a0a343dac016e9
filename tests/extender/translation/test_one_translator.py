"""``serve`` and ``plan`` judge the same request: a PodGang and its pods become one ``GangRequest`` whichever path reads
them. The three cases are the divergences issue 12 found between the coordinator's old translation and
``scheduler.extender.translation.gang_request``: a group whose pods ask for 2 and 6 GPUs, priority taken from the first
pod rather than the highest, and a group config naming podgroups the gang does not have.

Serve's path is the real one: a filter call through the HTTP app, the coordinator's planner, and the solver it
was given (``placement.solve``, wrapped to record the request). Plan's path is ``plan``'s own loop
(``scheduler.cli.plan.plan_snapshot``) on the same snapshot.
"""

from __future__ import annotations

from typing import Any

from api.core import Node, Pod
from api.grove import PodGang
from placement import solve
from placement.request import ClusterView, GangRequest, Result, SolveOptions
from scheduler.cli.plan import plan_snapshot
from scheduler.extender.translation.cluster_view import snapshot_view
from scheduler.extender.translation.gang_request import gang_request
from scheduler.snapshot import Snapshot
from tests.extender_support import CLIQUE, filter_one, harness, node, pod, podgang, run

NAMES = ["a0", "a1", "b0"]


def _cluster() -> list[Node]:
    return [node("a0", clique="A"), node("a1", clique="A"), node("b0", clique="B")]


def _with_priority(p: Pod, priority: int) -> Pod:
    return p.model_copy(update={"spec": p.spec.model_copy(update={"priority": priority})})


def _served_request(pods: list[Pod], gang: PodGang) -> tuple[list[GangRequest], dict[str, Any]]:
    """The requests serve's planner hands its solver when kube-scheduler asks about the first pod, and the reply."""
    seen: list[GangRequest] = []

    def recording(request: GangRequest, view: ClusterView, options: SolveOptions) -> Result:
        seen.append(request)
        return solve(request, view, options)

    h = harness(nodes=_cluster(), pods=pods, podgangs=[gang], solver=recording)

    async def main() -> dict[str, Any]:
        async with h.client() as client:
            return await filter_one(client, pods[0], NAMES)

    return seen, run(main)


def _planned_request(pods: list[Pod], gang: PodGang) -> GangRequest:
    """The request ``plan`` builds for the gang: its own call, on the snapshot it loads."""
    snapshot = Snapshot(nodes=_cluster(), pods=pods, podgangs=[gang])
    return gang_request(gang, {p.key: p for p in snapshot.pods}, snapshot.nodes)


def test_a_group_of_2_and_6_gpu_pods_is_planned_at_the_peak_by_both() -> None:
    # w0 asks 2 GPUs, w1 6: both paths plan the group at 6 GPUs a pod (the peak), so each fits where it is put.
    pods = [pod("w0", gang="g", gpus=2), pod("w1", gang="g", gpus=6)]
    gang = podgang("g", {"worker": (["w0", "w1"], 2)}, required=CLIQUE)
    served, reply = _served_request(pods, gang)
    planned = _planned_request(pods, gang)
    assert served == [planned]
    assert planned.groups[0].demand["nvidia.com/gpu"] == 6
    assert len(reply["NodeNames"]) == 1  # and serve placed it


def test_priority_is_the_highest_of_the_pods_on_both_paths() -> None:
    # The leader, referenced second, carries 100; the first worker 10: 100 on both paths (the old coordinator
    # took the first pod's 10).
    pods = [
        _with_priority(pod("w0", gang="g", gpus=4), 10),
        _with_priority(pod("l0", gang="g", cpu="2"), 100),
    ]
    gang = podgang("g", {"worker": (["w0"], 1), "leader": (["l0"], 1)})
    served, _ = _served_request(pods, gang)
    planned = _planned_request(pods, gang)
    assert served == [planned]
    assert planned.priority == 100


def test_a_group_config_naming_an_unknown_podgroup_is_refused_by_both_with_the_same_reason() -> None:
    # The old coordinator dropped "ghost" and planned the pack over "worker" alone; now both refuse, naming it.
    pods = [pod("w0", gang="g", gpus=4)]
    raw = podgang("g", {"worker": (["w0"], 1)}).model_dump(mode="json")
    raw["spec"]["topologyConstraintGroupConfigs"] = [
        {
            "name": "cfg",
            "podGroupNames": ["worker", "ghost"],
            "topologyConstraint": {"packConstraint": {"required": CLIQUE}},
        }
    ]
    gang = PodGang.model_validate(raw)
    served, reply = _served_request(pods, gang)
    assert served == []  # nothing reached the solver
    snapshot = Snapshot(nodes=_cluster(), pods=pods, podgangs=[gang])
    (entry,) = plan_snapshot(snapshot, snapshot_view(snapshot), SolveOptions())
    assert entry["status"] == "Invalid" and "ghost" in entry["reason"]
    assert reply["NodeNames"] == []
    assert set(reply["FailedNodes"].values()) == {entry["reason"]}
