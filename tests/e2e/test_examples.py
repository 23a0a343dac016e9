"""The shipped examples on the real control plane: ``kubectl apply`` a PodCliqueSet, the reconciler makes its
PodGangs and gated pods, kube-scheduler's ``grove`` profile and the extender bind every gang whole, within its
required topology domains; then the user guide's ``kubectl get`` and ``kubectl scale``, an HPA, startup order and
gang termination, all read back from the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.install import DEPLOY
from tests.e2e.reads import (
    all_whole,
    apply_in,
    condition,
    nodes_by_name,
    pack_violations,
    podgangs,
    pods,
    wait_for,
)

EXAMPLES = DEPLOY / "examples"


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


# (example, PodGangs it makes, pods it makes): the counts follow from each file's replicas (comments there).
CASES = [
    pytest.param("multinode-aggregated", 2, 8, id="multinode-aggregated"),  # 2 × (1 leader + 3 workers)
    # prefill 2 × (1 + 4), decode 1 × (1 + 2); prefill's second replica is a scaled gang
    pytest.param("multinode-disaggregated", 2, 13, id="multinode-disaggregated"),
    # router 1, prefill 3 × (1 + 3), decode 1 × (1 + 2); prefill replicas 1 and 2 are scaled gangs
    pytest.param("disaggregated-topology", 3, 16, id="disaggregated-topology"),
    pytest.param("training-scaled", 6, 32, id="training-scaled"),  # 2 × (1 + 3 × (4 + 1)), 3 gangs each
]


@pytest.mark.parametrize(("example", "gangs", "pod_count"), CASES)
def test_example_binds_every_gang_whole_within_its_required_domains(
    control_plane: ControlPlane, namespace: str, example: str, gangs: int, pod_count: int
) -> None:
    apply_in(control_plane, namespace, _documents(EXAMPLES / f"{example}.yaml"))
    wait_for(lambda: all_whole(control_plane, namespace, expected_gangs=gangs), timeout=120,
             what=f"every PodGang of {example} bound whole")  # fmt: skip
    listed = pods(control_plane, namespace)
    assert len(listed) == pod_count
    by_name = {p["metadata"]["name"]: p for p in listed}
    nodes = nodes_by_name(control_plane)
    violations = [v for gang in podgangs(control_plane, namespace) for v in pack_violations(gang, by_name, nodes)]
    assert not violations
    # The extender reports each gang as scheduled on its PodGang.
    wait_for(
        lambda: all(
            (condition(g, "Scheduled") or {}).get("status") == "True" for g in podgangs(control_plane, namespace)
        ),
        timeout=30,
        what="Scheduled=True on every PodGang",
    )
