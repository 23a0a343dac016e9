"""Quantities reach people in the extender's answers (FailedScheduling events show them) as Kubernetes writes
them: a pod asking for one core "needs 1 cpu", never "1000 cpu" (what a live event said before)."""

from __future__ import annotations

from typing import Any

import pytest

from api.core import GPU
from tests.extender_support import filter_one, harness, node, pod, podgang, run


def _refusal(*, node_cpu: str, groups: dict[str, tuple[int, str]]) -> str:
    """The text filter gives the first member of a gang with ``groups`` (name → pods, cpu of each) on two nodes of
    ``node_cpu``."""
    members = {
        name: [pod(f"{name}{i}", gang="g", gpus=1, cpu=cpu) for i in range(n)] for name, (n, cpu) in groups.items()
    }
    spec = {name: ([p.metadata.name for p in pods], len(pods)) for name, pods in members.items()}
    everyone = [p for pods in members.values() for p in pods]
    h = harness(
        nodes=[node("n0", cpu=node_cpu), node("n1", cpu=node_cpu)], pods=everyone, podgangs=[podgang("g", spec)]
    )

    async def main() -> dict[str, Any]:
        h.background()
        async with h.client() as client:
            return await filter_one(client, everyone[0], ["n0", "n1"])

    reply = run(main)
    reasons = {*reply.get("FailedNodes", {}).values(), *reply.get("FailedAndUnresolvableNodes", {}).values()}
    texts = [text for text in (*reasons, reply.get("Error") or "") if text]
    assert len(set(texts)) == 1, reply
    return texts[0]


@pytest.mark.parametrize(
    ("node_cpu", "groups", "said"),
    [
        # Each node has 1 core: 3 pods of 1 core fit 2 at a time.
        pytest.param("1", {"w": (3, "1")}, f"group w needs 3 pods of 1 cpu, 1 {GPU} each; only 2 fit", id="cores"),
        # 1500m fits on no node of 1 core.
        pytest.param("1", {"w": (1, "1500m")}, f"group w needs 1 pod of 1500m cpu, 1 {GPU} each", id="millicores"),
        # Each group alone fits (a node of 750m holds one pod of 500m), both need 4 × 500m = 2 cpu of 1500m.
        pytest.param(
            "750m",
            {"a": (2, "500m"), "b": (2, "500m")},
            "needs 2 cpu on eligible nodes; the cluster has 1500m cpu free (500m short)",
            id="the-sum",
        ),
    ],
)
def test_a_refusal_writes_cpu_as_kubernetes_does(node_cpu: str, groups: dict[str, tuple[int, str]], said: str) -> None:
    text = _refusal(node_cpu=node_cpu, groups=groups)
    assert said in text
    assert "000 cpu" not in text and "000m" not in text and "pods each" not in text
