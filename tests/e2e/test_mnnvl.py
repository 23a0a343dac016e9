"""MNNVL on the real API server, as the README has an operator turn it on: the NVIDIA DRA driver's ComputeDomain CRD
(a stand-in: no driver runs here), then ``kubectl apply -k deploy/overlays/mnnvl``, which adds the MNNVL role and
``--mnnvl`` to the reconciler's Deployment (the reconciler is restarted from that Deployment). The shipped role is
then enough (no refusal in any log: ``conftest.no_forbidden``; that it is needed is ``test_rbac``'s), the reconciler
keeps one ComputeDomain per PodCliqueSet replica and group, and the enrolled pods claim from the template the domain
names, as Grove's operator makes them. Afterwards the role is deleted, the install applied again as it was, and the
reconciler runs as that Deployment has it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from benchmarks.controlplane.cluster import ControlPlane
from benchmarks.controlplane.dra_driver import serve_compute_domains
from benchmarks.controlplane.install import DEPLOY
from tests.e2e.reads import apply_in, pods, wait_for

OVERLAY = DEPLOY / "overlays" / "mnnvl"
RBAC = OVERLAY / "reconciler-rbac-mnnvl.yaml"
MNNVL_PCS = """  # GPU cliques enrolled in an MNNVL group, and a CPU clique that is not
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: nvl
  annotations: {grove.io/mnnvl-group: rack}
spec:
  replicas: 2
  template:
    cliques:
    - name: gpu
      spec:
        roleName: gpu
        replicas: 2
        podSpec:
          schedulerName: grove
          containers: [{name: c, image: nginx, resources: {limits: {nvidia.com/gpu: "1"}}}]
    - name: cpu
      spec:
        roleName: cpu
        replicas: 1
        podSpec: {schedulerName: grove, containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]}
"""


@pytest.fixture
def mnnvl_on(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    plane = control_plane
    assert plane.installed is not None and plane.reconciler is not None
    serve_compute_domains(plane.kubectl)
    plane.kubectl("apply", "-k", str(OVERLAY))
    plane.reconciler.stop(kill=True)
    plane.start_reconciler()
    try:
        yield plane
    finally:
        plane.reconciler.stop(kill=True)
        plane.kubectl("delete", "--ignore-not-found", "-f", str(RBAC))
        plane.kubectl("apply", "-k", str(plane.installed))
        plane.start_reconciler()


def test_the_mnnvl_role_lets_the_reconciler_keep_a_compute_domain_per_replica(
    mnnvl_on: ControlPlane, namespace: str
) -> None:
    plane = mnnvl_on
    apply_in(plane, namespace, yaml.safe_load_all(MNNVL_PCS))
    path = f"/apis/resource.nvidia.com/v1beta1/namespaces/{namespace}/computedomains"

    def listed() -> list[dict[str, Any]] | None:
        found = plane.api.items(path)
        return found if sorted(d["metadata"]["name"] for d in found) == ["nvl-0-rack", "nvl-1-rack"] else None

    domains = wait_for(listed, timeout=60, what="a ComputeDomain per replica of the rack group")
    for domain in domains:
        name = domain["metadata"]["name"]
        assert domain["spec"]["channel"]["resourceClaimTemplate"]["name"] == name  # the driver makes that template
        assert [r["kind"] for r in domain["metadata"]["ownerReferences"]] == ["PodCliqueSet"]

    def all_pods() -> list[dict[str, Any]] | None:
        found = pods(plane, namespace)
        return found if len(found) == 6 else None  # 2 replicas × (2 GPU pods + 1 CPU pod)

    created = wait_for(all_pods, timeout=60, what="6 pods")
    claims = {
        p["metadata"]["name"]: [
            (c["name"], c.get("resourceClaimTemplateName")) for c in p["spec"].get("resourceClaims", [])
        ]
        for p in created
    }
    for name, claimed in claims.items():
        replica = name.split("-")[1]
        expected = [("mnnvl-claim", f"nvl-{replica}-rack")] if "-gpu-" in name else []  # a CPU clique is not enrolled
        assert claimed == expected, name
