"""The Grove user guide's hands-on commands, with the real kubectl against the real API server: ``kubectl get
pclq,pcsg``, ``kubectl scale pcsg …``, ``kubectl scale pclq …``, and HPAs on a clique and a scaling group. Every
gang that appears is bound whole."""

from __future__ import annotations

from collections import Counter
from typing import Any

import yaml

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.install import DEPLOY
from tests.e2e.reads import GROVE, all_whole, apply_in, pods, wait_for

PCS = "multinode-aggregated"
GROUP = f"{PCS}-0-model-instance"


def _cliques(plane: ControlPlane, namespace: str) -> Counter[str]:
    return Counter(p["metadata"]["labels"]["grove.io/podclique"] for p in pods(plane, namespace))


def _names(plane: ControlPlane, namespace: str, resources: str) -> list[str]:
    return plane.kubectl("-n", namespace, "get", resources, "-o", "name").split()


def test_get_then_scale_pcsg_then_scale_pclq_as_the_guide_shows(control_plane: ControlPlane, namespace: str) -> None:
    apply_in(control_plane, namespace, yaml.safe_load_all((DEPLOY / "examples" / f"{PCS}.yaml").read_text()))
    wait_for(lambda: all_whole(control_plane, namespace, expected_gangs=2), timeout=60, what="both gangs whole")
    # 2 model instances × (1 leader + 3 workers), instance 0 in the base gang, instance 1 in a scaled one
    assert _cliques(control_plane, namespace) == {
        f"{GROUP}-0-leader": 1,
        f"{GROUP}-0-worker": 3,
        f"{GROUP}-1-leader": 1,
        f"{GROUP}-1-worker": 3,
    }
    assert _names(control_plane, namespace, "pclq,pcsg,pg") == [
        *(f"podclique.grove.io/{GROUP}-{i}-{c}" for i in (0, 1) for c in ("leader", "worker")),
        f"podcliquescalinggroup.grove.io/{GROUP}",
        f"podgang.scheduler.grove.io/{PCS}-0",
        f"podgang.scheduler.grove.io/{GROUP}-0",
    ]
    table = control_plane.kubectl("-n", namespace, "get", "pcsg")  # the CRD's printer columns
    assert table.split("\n")[0].split()[:3] == ["NAME", "MINAVAIL", "REPLICAS"] and GROUP in table

    # kubectl scale pcsg …-model-instance --replicas=3: a third instance of 1 + 3, in a new scaled gang
    control_plane.kubectl("-n", namespace, "scale", "pcsg", GROUP, "--replicas=3")
    wait_for(lambda: all_whole(control_plane, namespace, expected_gangs=3), timeout=60, what="three gangs whole")
    counts = _cliques(control_plane, namespace)
    assert counts[f"{GROUP}-2-leader"] == 1 and counts[f"{GROUP}-2-worker"] == 3
    assert f"podgang.scheduler.grove.io/{GROUP}-1" in _names(control_plane, namespace, "pg")

    # kubectl scale pclq …-0-worker --replicas=4: one more worker in instance 0, best-effort in the base gang
    control_plane.kubectl("-n", namespace, "scale", "pclq", f"{GROUP}-0-worker", "--replicas=4")

    def base_group() -> dict[str, Any] | None:
        gang = control_plane.api.get(f"/apis/scheduler.grove.io/v1alpha1/namespaces/{namespace}/podgangs/{PCS}-0")
        group = next(g for g in gang["spec"]["podgroups"] if g["name"] == f"{GROUP}-0-worker")
        return group if len(group["podReferences"]) == 4 else None

    group = wait_for(base_group, timeout=60, what="the base gang lists the fourth worker")
    assert group["minReplicas"] == 3
    wait_for(lambda: all_whole(control_plane, namespace, expected_gangs=3), timeout=60, what="the extra bound too")
    assert _cliques(control_plane, namespace)[f"{GROUP}-0-worker"] == 4


AUTOSCALED = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: autoscaled
spec:
  replicas: 1
  template:
    cliques:
    - name: frontend
      spec:
        roleName: frontend
        replicas: 1
        podSpec:
          schedulerName: grove
          containers: [{name: frontend, image: nginx, resources: {requests: {cpu: "1"}}}]
        autoScalingConfig:
          minReplicas: 1
          maxReplicas: 3
          metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}}]
    - name: worker
      spec:
        roleName: worker
        replicas: 2
        podSpec:
          schedulerName: grove
          containers: [{name: worker, image: nginx, resources: {requests: {cpu: "2", nvidia.com/gpu: "1"},
                                                                 limits: {nvidia.com/gpu: "1"}}}]
    podCliqueScalingGroups:
    - name: workers
      cliqueNames: [worker]
      replicas: 1
      scaleConfig:
        minReplicas: 1
        maxReplicas: 4
        metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
"""


def test_hpas_target_the_scale_subresources_and_scaling_through_them_binds_whole(
    control_plane: ControlPlane, namespace: str
) -> None:
    """No HPA controller runs here (it is part of kube-controller-manager): the test checks what it would act on —
    the HPAs the API server accepted, the scale subresource each targets, that subresource's selector (how the
    controller finds the pods whose metrics it reads) — and does what it would do: scale through that subresource."""
    apply_in(control_plane, namespace, yaml.safe_load_all(AUTOSCALED))
    wait_for(lambda: all_whole(control_plane, namespace, expected_gangs=1), timeout=60, what="the gang whole")

    def listed() -> list[dict[str, Any]] | None:
        items: list[dict[str, Any]] = control_plane.kubectl.json("-n", namespace, "get", "hpa")["items"]
        return items if len(items) == 2 else None

    hpas = {h["metadata"]["name"]: h for h in wait_for(listed, timeout=30, what="two HPAs")}
    clique, group = "autoscaled-0-frontend", "autoscaled-0-workers"
    assert sorted(hpas) == [clique, group]
    for name, kind, plural, low, high in ((clique, "PodClique", "podcliques", 1, 3),
                                         (group, "PodCliqueScalingGroup", "podcliquescalinggroups", 1, 4)):  # fmt: skip
        spec = hpas[name]["spec"]
        assert spec["scaleTargetRef"] == {"apiVersion": "grove.io/v1alpha1", "kind": kind, "name": name}
        assert (spec["minReplicas"], spec["maxReplicas"]) == (low, high)
        scale = control_plane.api.get(f"{GROVE.format(ns=namespace)}/{plural}/{name}/scale")
        selected = pods(control_plane, namespace, scale["status"]["selector"])
        assert selected and all(name in p["metadata"]["name"] for p in selected), scale["status"]
    # What the HPA controller does when the frontend runs hot: PATCH the target's scale subresource.
    control_plane.kubectl("-n", namespace, "scale", "pclq", clique, "--replicas=3")
    control_plane.kubectl("-n", namespace, "scale", "pcsg", group, "--replicas=2")
    wait_for(
        lambda: len(pods(control_plane, namespace)) == 3 + 2 * 2 and all_whole(control_plane, namespace),
        timeout=60,
        what="3 frontends and 2 worker replicas, every gang whole",
    )
