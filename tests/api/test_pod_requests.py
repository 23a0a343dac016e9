"""``Pod.requests()`` computes what kube-scheduler's NodeResourcesFit charges a node for the pod."""

from __future__ import annotations

import json

import pytest

from api.core import Pod
from scheduler.kube.decoding import PodDecoder
from scheduler.kube.foreign import ForeignPod, OurPods
from tests.builders import PodBuilder, make_node, make_pod

GI = 2**30


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(make_pod("p").cpu("2").memory("4Gi"), {"cpu": 2000, "memory": 4 * GI, "pods": 1}, id="one"),
        pytest.param(
            # 1 + 500m cpu across two app containers
            make_pod("p").cpu("1").container("side", requests={"cpu": "500m"}),
            {"cpu": 1500, "pods": 1},
            id="containers-summed",
        ),
        pytest.param(
            # init 4 cpu runs alone before the app's 1 cpu: max(1, 4) = 4
            make_pod("p").cpu("1").init_container("init", requests={"cpu": "4"}),
            {"cpu": 4000, "pods": 1},
            id="init-peak-wins",
        ),
        pytest.param(
            # init 500m is below the app's 2 cpu: max(2, 0.5) = 2
            make_pod("p").cpu("2").init_container("init", requests={"cpu": "500m"}),
            {"cpu": 2000, "pods": 1},
            id="app-wins",
        ),
        pytest.param(
            # sidecar 1 keeps running: app 2 + sidecar 1 = 3; the later init runs beside the sidecar: 1 + 1 = 2
            make_pod("p")
            .cpu("2")
            .init_container("proxy", requests={"cpu": "1"}, sidecar=True)
            .init_container("init", requests={"cpu": "1"}),
            {"cpu": 3000, "pods": 1},
            id="sidecar-added-to-app",
        ),
        pytest.param(
            # init 3 after sidecar 1 needs 3 + 1 = 4 at its peak, above app 1 + sidecar 1 = 2
            make_pod("p")
            .cpu("1")
            .init_container("proxy", requests={"cpu": "1"}, sidecar=True)
            .init_container("init", requests={"cpu": "3"}),
            {"cpu": 4000, "pods": 1},
            id="init-beside-earlier-sidecar",
        ),
        pytest.param(
            # an init that runs before the sidecar starts does not see it: max(1 + 1, 3) = 3
            make_pod("p")
            .cpu("1")
            .init_container("init", requests={"cpu": "3"})
            .init_container("proxy", requests={"cpu": "1"}, sidecar=True),
            {"cpu": 3000, "pods": 1},
            id="init-before-sidecar",
        ),
        pytest.param(
            # RuntimeClass overhead is added on top: 1 cpu + 250m
            make_pod("p").cpu("1").overhead("cpu", "250m").overhead("memory", "64Mi"),
            {"cpu": 1250, "memory": 64 * 2**20, "pods": 1},
            id="overhead",
        ),
        pytest.param(
            # no request: the API server would default it to the limit
            make_pod("p").limit("cpu", "3").limit("nvidia.com/gpu", "2"),
            {"cpu": 3000, "nvidia.com/gpu": 2, "pods": 1},
            id="limits-as-requests",
        ),
        pytest.param(
            # an explicit request beats the limit
            make_pod("p").cpu("1").limit("cpu", "3"),
            {"cpu": 1000, "pods": 1},
            id="request-beats-limit",
        ),
        pytest.param(make_pod("p").gpus(4), {"nvidia.com/gpu": 4, "pods": 1}, id="gpus"),
        pytest.param(make_pod("p").gpus(0), {"pods": 1}, id="zero-dropped"),
    ],
)
def test_requests(pod: PodBuilder, expected: dict[str, int]) -> None:
    built = pod.obj()
    assert isinstance(built, Pod)
    assert built.requests() == expected
    # The watch decodes a pod of another scheduler without the model (scheduler.kube.decoding): same arithmetic.
    raw = json.dumps({"type": "ADDED", "object": pod.scheduler("default-scheduler").dict()}).encode()
    change = PodDecoder(keeps_whole=OurPods().include, stamp=dict).change(raw)
    assert change is not None and isinstance(change[1], ForeignPod)
    assert change[1].requests == expected


def test_broken_quantity_names_the_resource() -> None:
    with pytest.raises(ValueError, match="cpu"):
        make_pod("p").cpu("two").obj()


def test_nulls_from_the_api_server_read_as_empty() -> None:
    pod = Pod.model_validate(
        {
            "metadata": {"name": "p", "labels": None},
            "spec": {"containers": None, "tolerations": None, "nodeSelector": None},
        }
    )
    assert pod.requests() == {"pods": 1}
    assert pod.metadata.labels == {}


def test_pod_flags() -> None:
    assert make_pod("p").gated().obj().gated
    assert not make_pod("p").obj().gated
    assert make_pod("p").phase("Succeeded").obj().terminal
    assert make_pod("p").phase("Failed").obj().terminal
    assert not make_pod("p").on("n").obj().terminal
    assert make_pod("p").ns("team").obj().key == "team/p"


def test_node_allocatable_falls_back_to_capacity() -> None:
    node = make_node("n").gpus(8).obj()
    assert node.allocatable()["nvidia.com/gpu"] == 8
    raw = make_node("n").gpus(4).dict()
    del raw["status"]["allocatable"]
    from api.core import Node

    assert Node.model_validate(raw).allocatable()["nvidia.com/gpu"] == 4
