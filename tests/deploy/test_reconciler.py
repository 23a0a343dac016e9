"""The reconciler's manifests: the CRD keeps every field of the examples, and RBAC allows every request it makes."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from benchmarks.sim.fakeapi import PODCLIQUESCALINGGROUPS, PODCLIQUESETS, Request, running
from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.rest_client import WATCHED_KINDS, KubeApi
from scheduler.reconcile.rules.features import Features
from tests.crd_schema import crd_schema, pruned
from tests.reconcile.examples import EXAMPLES, example
from tests.reconcile.settling import within

DEPLOY = EXAMPLES.parent
_REQUEST_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[a-z0-9.]+)/v[0-9a-z]+)(?:/namespaces/[^/]+)?/(?P<resource>[a-z]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>status|scale))?$"
)


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _schema() -> dict[str, Any]:
    return crd_schema(DEPLOY / "crds" / "podcliqueset.yaml")


def test_crd_is_grove_pcs_with_status_and_scale() -> None:
    (crd,) = _documents(DEPLOY / "crds" / "podcliqueset.yaml")
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "podcliquesets.grove.io"
    assert (spec["group"], spec["scope"], spec["names"]["kind"], spec["names"]["shortNames"]) == (
        "grove.io",
        "Namespaced",
        "PodCliqueSet",
        ["pcs"],
    )
    (version,) = spec["versions"]
    assert version["name"] == "v1alpha1" and version["storage"] and version["served"]
    assert version["subresources"]["status"] == {}
    # Grove's podcliqueset.go kubebuilder markers: the scale subresource, with the selector an HPA needs, and the
    # update-progress printer columns of grove.io_podcliquesets.yaml.
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.hpaPodSelector",
    }
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    progress = ".status.updateProgress."
    assert {name: columns.get(name) for name in ("PCLQs-Updated", "PCLQs-Total", "PCSGs-Updated", "PCSGs-Total")} == {
        "PCLQs-Updated": f"{progress}updatedPodCliquesCount",
        "PCLQs-Total": f"{progress}totalPodCliquesCount",
        "PCSGs-Updated": f"{progress}updatedPodCliqueScalingGroupsCount",
        "PCSGs-Total": f"{progress}totalPodCliqueScalingGroupsCount",
    }


@pytest.mark.parametrize(
    "name", ["multinode-aggregated", "multinode-disaggregated", "training-scaled", "disaggregated-topology"]
)
def test_crd_schema_keeps_every_field_of_the_examples(name: str) -> None:
    pcs = next(d for d in _documents(EXAMPLES / f"{name}.yaml") if d["kind"] == "PodCliqueSet")
    assert pruned(pcs, _schema()) == []


def test_crd_schema_would_prune_a_misspelt_field() -> None:
    document = example("multinode-aggregated")
    document["spec"]["template"]["podCliqueScalingGroups"][0]["minAvailible"] = 1
    assert pruned(document, _schema()) == [".spec.template.podCliqueScalingGroups[0].minAvailible"]


def _verb(request: Request) -> tuple[str, str, str]:
    match = _REQUEST_PATH.match(request.path)
    assert match, request.path
    resource = match["resource"] + (f"/{match['sub']}" if match["sub"] else "")
    if request.method == "GET":
        verb = "watch" if request.query.get("watch") == "true" else ("get" if match["name"] else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[request.method]
    return match["group"] or "", resource, verb


def _allowed(manifest: str = "overlays/standalone/reconciler-rbac.yaml") -> set[tuple[str, str, str]]:
    role = next(d for d in _documents(DEPLOY / manifest) if d["kind"] == "ClusterRole")
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_rbac_allows_every_request_the_reconciler_makes_and_no_other() -> None:
    # Every kind of call the real client makes: creates, template updates (PUT), status patches, scale-in deletes,
    # HPAs, the startup-order identity, refusal events, topology lookups and the watches.
    broken = example("multinode-aggregated")
    broken["metadata"]["name"] = "broken"
    broken["spec"]["template"]["cliques"][0]["spec"]["replicas"] = -1
    topology = example("multinode-disaggregated")
    topology["spec"]["template"]["topologyConstraint"] = {"topologyName": "t", "pack": {"required": "rack"}}
    ordered = example("training-scaled")  # Explicit startup: grove-initc, its ServiceAccount, Role, RoleBinding
    ordered["spec"]["replicas"] = 1
    autoscaled = example("multinode-aggregated")
    autoscaled["metadata"]["name"] = "autoscaled"
    autoscaled["spec"]["template"]["podCliqueScalingGroups"][0]["scaleConfig"] = {"maxReplicas": 4}
    shared = example("multinode-aggregated")  # DRA resource sharing, with an external ResourceClaimTemplate
    shared["metadata"]["name"] = "shared"
    shared["spec"]["template"]["resourceSharing"] = [{"name": "gpu", "scope": "PerReplica"}]
    claim_template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}},
    }
    names = ("multinode-aggregated", "broken", "multinode-disaggregated", "training", "autoscaled", "shared")
    with running() as server:
        for document in (
            example("multinode-aggregated"),
            broken,
            topology,
            ordered,
            autoscaled,
            claim_template,
            shared,
        ):
            server.apply(document)
        api = KubeApi(client.ApiClient(client.Configuration(host=server.url)))
        stop = threading.Event()
        threads = api.start_watches(stop)
        reconciler = Reconciler(api)
        for name in names:
            reconciler.reconcile("default", name)
        group = server.store.find(PODCLIQUESCALINGGROUPS, "default", "multinode-aggregated-0-model-instance")
        server.store.scale(PODCLIQUESCALINGGROUPS, group, {"spec": {"replicas": 1}}, "PATCH")
        relabelled = server.get(PODCLIQUESETS, "multinode-aggregated", "default")
        assert relabelled is not None
        relabelled["spec"]["template"]["cliques"][0]["labels"] = {"tier": "leader"}  # PodClique update (PUT)
        _seen(api, server.apply(relabelled))
        for _ in range(2):  # the rolling update starts, then reaches replica 0 and rewrites its PodCliques
            reconciler.reconcile("default", "multinode-aggregated")
        # Someone relabels one object of each kind the reconciler keeps: it writes its labels back (PUT).
        for resource in _RELABELLED:
            obj = server.objects(resource)[0]
            obj["metadata"]["labels"]["drifted"] = "yes"
            _seen(api, server.put(resource, obj))
            reconciler.reconcile("default", obj["metadata"]["labels"]["app.kubernetes.io/part-of"])
        # Every PodCliqueSet deleted: the reconciler deletes what each owned (no garbage collector here).
        for name in names:
            server.delete(PODCLIQUESETS, name, "default")
            within(10, lambda name=name: api.cache.get("PodCliqueSet", "default", name) is None)
            reconciler.reconcile("default", name)
        api.changes(1.0)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    made = {_verb(r) for r in server.requests}
    assert {("", "pods", "create"), ("", "pods", "patch"), ("", "pods", "delete"), ("", "events", "create")} <= made
    assert {
        ("grove.io", "podcliques", "update"),
        ("grove.io", "podcliques", "delete"),
        ("grove.io", "podcliques/status", "patch"),
        ("grove.io", "podcliquescalinggroups/status", "patch"),
        ("autoscaling", "horizontalpodautoscalers", "create"),
        ("rbac.authorization.k8s.io", "rolebindings", "create"),
        ("", "serviceaccounts", "create"),
        ("", "secrets", "create"),
        ("resource.k8s.io", "resourceclaims", "create"),
        ("resource.k8s.io", "resourceclaimtemplates", "get"),
        ("grove.io", "clustertopologybindings", "get"),
    } <= made
    assert made - _allowed() == set()
    # And nothing more: every verb granted is one the reconciler asks for, but these, which the API server needs it
    # to hold for its other requests to pass.
    assert _allowed() - made == _HELD_NOT_CALLED


def _seen(api: KubeApi, obj: dict[str, Any]) -> None:
    """Wait until the reconciler's informers hold ``obj`` as written: a pass reads them, not the server."""
    meta = obj["metadata"]
    if obj["kind"] not in WATCHED_KINDS:
        return

    def held() -> bool:
        cached = api.cache.get(obj["kind"], meta.get("namespace", ""), meta["name"]) or {"metadata": {}}
        return bool(cached["metadata"].get("resourceVersion") == meta["resourceVersion"])

    within(10, held)


# The kinds (fake API server resource keys) the reconciler writes back whole when their labels drift.
_RELABELLED = (
    "v1/services",
    "v1/serviceaccounts",
    "rbac.authorization.k8s.io/v1/roles",
    "rbac.authorization.k8s.io/v1/rolebindings",
    "autoscaling/v2/horizontalpodautoscalers",
    "resource.k8s.io/v1/resourceclaims",
    "scheduler.grove.io/v1alpha1/podgangs",
    PODCLIQUESCALINGGROUPS,
)
_HELD_NOT_CALLED = {
    # RBAC lets it create the init container's Role (get/list/watch pods and pods/status) only while it holds those.
    ("", "pods", "get"),
    ("", "pods/status", "get"),
    ("", "pods/status", "list"),
    ("", "pods/status", "watch"),
    # OwnerReferencesPermissionEnforcement: an owner reference with blockOwnerDeletion needs update on the owner's
    # finalizers (make e2e's RBAC scenario shows each of these refused without them).
    ("grove.io", "podcliquesets/finalizers", "update"),
    ("grove.io", "podcliques/finalizers", "update"),
    ("grove.io", "podcliquescalinggroups/finalizers", "update"),
}


def test_mnnvl_rbac_allows_what_the_reconciler_does_with_mnnvl_on() -> None:
    # Off by default: the ComputeDomain rules ship apart (deploy/overlays/mnnvl/reconciler-rbac-mnnvl.yaml), bound
    # to the same account.
    document = example("training-scaled")
    document["metadata"]["annotations"] = {"grove.io/mnnvl-group": "nvl"}
    with running() as server:
        server.apply(document)
        api = KubeApi(client.ApiClient(client.Configuration(host=server.url)))
        reconciler = Reconciler(api, features=Features(mnnvl=True))
        reconciler.reconcile("default", "training")
        document["spec"]["replicas"] = 1  # a ComputeDomain released and deleted
        server.apply(document)
        reconciler.reconcile("default", "training")
    made = {_verb(r) for r in server.requests}
    domains = {("resource.nvidia.com", "computedomains", verb) for verb in ("list", "create", "update", "delete")}
    assert domains <= made
    assert made - _allowed() - _allowed("overlays/mnnvl/reconciler-rbac-mnnvl.yaml") == set()
    assert not _allowed() & domains
    (binding,) = [
        d for d in _documents(DEPLOY / "overlays/mnnvl/reconciler-rbac-mnnvl.yaml") if d["kind"] == "ClusterRoleBinding"
    ]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "grove-reconciler", "namespace": "grove-system"}]


def _deployment() -> dict[str, Any]:
    (deployment,) = [d for d in _documents(DEPLOY / "reconciler/reconciler.yaml") if d["kind"] == "Deployment"]
    return deployment


def test_deployment_runs_the_reconcile_command_as_its_service_account() -> None:
    deployment = _deployment()
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "grove-reconciler"
    assert pod["containers"][0]["command"][:2] == ["grove-extender", "reconcile"]
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
    # The account lives beside the Deployment, so that either RBAC install (cluster-wide or namespaced) binds it.
    accounts = [d for d in _documents(DEPLOY / "reconciler/reconciler.yaml") if d["kind"] == "ServiceAccount"]
    assert [(a["metadata"]["name"], a["metadata"]["namespace"]) for a in accounts] == [
        ("grove-reconciler", deployment["metadata"]["namespace"])
    ]
    for manifest in (
        "overlays/standalone/reconciler-rbac.yaml",
        "overlays/namespaced/reconciler-rbac-namespaced.yaml",
        "overlays/mnnvl/reconciler-rbac-mnnvl.yaml",
    ):
        assert not [d for d in _documents(DEPLOY / manifest) if d["kind"] == "ServiceAccount"], manifest


def test_deployment_probes_the_reconcilers_own_probe_port() -> None:
    (container,) = _deployment()["spec"]["template"]["spec"]["containers"]
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in container["command"] if arg.startswith("--probe-"))
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert flags == {"probe-port": str(ports["probes"]), "probe-host": "0.0.0.0"}  # the kubelet calls the pod's IP
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}


def _rules(manifest: str, kind: str) -> list[dict[str, Any]]:
    (role,) = [d for d in _documents(DEPLOY / manifest) if d["kind"] == kind and d["metadata"]["name"].startswith(
        "grove-reconciler") and not d["metadata"]["name"].endswith("-topology-reader")]  # fmt: skip
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def test_the_namespaced_role_is_the_cluster_role_but_its_cluster_scoped_read() -> None:
    # One list of rules in two files: they may differ only by the cluster-scoped kind a Role cannot grant, which
    # the namespaced install grants alone, read-only, in a ClusterRole of its own.
    cluster = _rules("overlays/standalone/reconciler-rbac.yaml", "ClusterRole")
    namespaced = _rules("overlays/namespaced/reconciler-rbac-namespaced.yaml", "Role")
    topology = {"apiGroups": ["grove.io"], "resources": ["clustertopologybindings"], "verbs": ["get"]}
    assert [rule for rule in cluster if rule != topology] == namespaced
    namespaced_file = DEPLOY / "overlays" / "namespaced" / "reconciler-rbac-namespaced.yaml"
    documents = {(d["kind"], d["metadata"]["name"]): d for d in _documents(namespaced_file)}
    assert documents["ClusterRole", "grove-reconciler-topology-reader"]["rules"] == [topology]
    account = [{"kind": "ServiceAccount", "name": "grove-reconciler", "namespace": "grove-system"}]
    for kind, name, role_kind in (
        ("RoleBinding", "grove-reconciler", "Role"),
        ("ClusterRoleBinding", "grove-reconciler-topology-reader", "ClusterRole"),
    ):
        binding = documents[kind, name]
        assert binding["subjects"] == account
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                                      "name": "grove-reconciler" if kind == "RoleBinding" else name}  # fmt: skip
    # No namespace written on the Role and RoleBinding: `kubectl apply -n NS` puts them where the user serves.
    assert "namespace" not in documents["Role", "grove-reconciler"]["metadata"]
    assert "namespace" not in documents["RoleBinding", "grove-reconciler"]["metadata"]


def test_init_container_image_is_the_reconcilers_own() -> None:
    # grove-initc runs `grove-extender initc`: the image the reconciler injects must be one that has it — its own.
    deployment = _deployment()
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[command.index("--initc-image") + 1] == "$(INITC_IMAGE)"  # the kubelet expands it from env
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["INITC_IMAGE"] == container["image"]
