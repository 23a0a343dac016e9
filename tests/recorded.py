"""The recorded kube-scheduler v1.36 requests (tests/fixtures/kube-scheduler-v1.36) and the cluster they describe."""

from __future__ import annotations

import json
from typing import Any

from api.core import Node, NodeList, Pod
from api.grove import PodGang
from tests.conftest import FIXTURES as FIXTURES_ROOT
from tests.extender_support import podgang

FIXTURES = FIXTURES_ROOT / "kube-scheduler-v1.36"
MODES = ["node-list", "node-names"]


def recordings(mode: str) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted((FIXTURES / mode).glob("*.json"))]


def recorded_cluster(mode: str) -> tuple[list[Node], list[Pod]]:
    """The recording's three nodes and every pod it asked about (pending)."""
    nodes = NodeList.model_validate(recordings("node-list")[0]["request"]["Nodes"]).items  # node-list carries Nodes
    pods: dict[str, Pod] = {}
    for recording in recordings(mode):
        if recording["path"] == "/filter":
            pod = Pod.model_validate(recording["request"]["Pod"])
            pods.setdefault(pod.key, pod)
    return nodes, list(pods.values())


def infer_gang(pods: list[Pod]) -> PodGang:
    """The PodGang Grove would have made for ``infer-0``: leader 1/1, workers 2/2."""
    groups: dict[str, list[str]] = {}
    for pod in pods:
        if pod.metadata.labels.get("grove.io/podgang") == "infer-0":
            groups.setdefault(pod.metadata.labels["grove.io/podclique"], []).append(pod.metadata.name)
    return podgang("infer-0", {name: (members, len(members)) for name, members in groups.items()})
