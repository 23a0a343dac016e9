"""The trust boundary as the manifests ship it: mTLS files that line up, a NetworkPolicy that admits only the
scheduler, certificates whose names match the URL kube-scheduler calls, and Pod Security "restricted" everywhere."""

from __future__ import annotations

import copy
import tomllib
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from scheduler.cli.certs import CLIENT_NAME, CLIENT_SECRET, SERVER_SECRET, issue, secrets_manifest, service_names
from tests.conftest import REPO_ROOT
from tests.deploy.manifests import DEPLOY, documents, extender_args, find, of_kind, pod_spec, scheduler_config
from tests.deploy.pod_security import restricted_violations

TLS_KEYS = {"tls.crt", "tls.key", "ca.crt"}  # a kubernetes.io/tls Secret with its CA, as certs and cert-manager write


def secret_file(deployment: str, path: str) -> tuple[str, str]:
    """(Secret name, key) that ``path`` reads in ``deployment``'s first container, through a Secret volume mount."""
    spec = pod_spec(deployment)
    volumes = {v["name"]: v for v in spec["volumes"]}
    for mount in spec["containers"][0]["volumeMounts"]:
        directory = PurePosixPath(mount["mountPath"])
        if PurePosixPath(path).parent == directory:
            secret = volumes[mount["name"]].get("secret")
            assert secret is not None, f"{path} is mounted from volume {mount['name']}, not a Secret"
            assert mount.get("readOnly") is True, f"{mount['mountPath']} must be mounted read-only"
            return secret["secretName"], PurePosixPath(path).name
    raise AssertionError(f"{deployment}: nothing mounts {path}")


def test_scheduler_calls_the_extender_over_mtls_with_its_client_secret() -> None:
    (extender,) = scheduler_config()["extenders"]
    assert extender["enableHTTPS"] is True
    tls = extender["tlsConfig"]
    assert not tls.get("insecure"), "the extender's certificate must be verified"
    files = {field: secret_file("grove-scheduler", tls[field]) for field in ("certFile", "keyFile", "caFile")}
    assert {secret for secret, _ in files.values()} == {CLIENT_SECRET}
    assert {field: key for field, (_, key) in files.items()} == {
        "certFile": "tls.crt",
        "keyFile": "tls.key",
        "caFile": "ca.crt",
    }


def test_extender_requires_client_certificates_from_its_server_secret() -> None:
    args = extender_args()
    files = {flag: secret_file("grove-extender", args[flag]) for flag in ("tls-cert", "tls-key", "client-ca")}
    assert {secret for secret, _ in files.values()} == {SERVER_SECRET}
    assert {flag: key for flag, (_, key) in files.items()} == {
        "tls-cert": "tls.crt",
        "tls-key": "tls.key",
        "client-ca": "ca.crt",
    }
    container = pod_spec("grove-extender")["containers"][0]
    assert "--allow-unauthenticated" not in container["args"]
    assert "debug-port" not in args, "metrics and /debug/gangs are off by default"
    assert args["client-san"] == CLIENT_NAME, "the name grove-extender certs gives kube-scheduler's certificate"


def test_ports_line_up_from_the_scheduler_url_to_the_container() -> None:
    url = urlparse(scheduler_config()["extenders"][0]["urlPrefix"])
    service = find("Service", "grove-extender")
    (service_port,) = service["spec"]["ports"]
    container = pod_spec("grove-extender")["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    args = extender_args()
    assert url.scheme == "https" and url.port == service_port["port"]
    assert ports[service_port["targetPort"]] == int(args["port"])
    # The kubelet presents no client certificate: both probes use the plain probe port, never the verb port.
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert ports[get["port"]] == int(args["probe-port"]) != int(args["port"])
        assert get.get("scheme", "HTTP") == "HTTP"


def test_network_policy_admits_only_the_scheduler_to_the_verb_port() -> None:
    policy = find("NetworkPolicy", "grove-extender")
    spec = policy["spec"]
    extender_labels = find("Deployment", "grove-extender")["spec"]["template"]["metadata"]["labels"]
    scheduler_labels = find("Deployment", "grove-scheduler")["spec"]["template"]["metadata"]["labels"]
    assert policy["metadata"]["namespace"] == find("Deployment", "grove-extender")["metadata"]["namespace"]
    assert spec["podSelector"]["matchLabels"].items() <= extender_labels.items()
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    (rule,) = spec["ingress"]
    (peer,) = rule["from"]
    assert set(peer) == {"podSelector"}, "same namespace, scheduler pods only"
    assert peer["podSelector"]["matchLabels"].items() <= scheduler_labels.items()
    assert not peer["podSelector"]["matchLabels"].items() <= extender_labels.items()
    assert rule["ports"] == [{"protocol": "TCP", "port": int(extender_args()["port"])}]


def _policies_of(deployment: str) -> list[dict[str, Any]]:
    """The NetworkPolicies that select ``deployment``'s pods."""
    found = find("Deployment", deployment)
    labels = found["spec"]["template"]["metadata"]["labels"].items()
    return [
        p
        for p in of_kind("NetworkPolicy")
        if p["metadata"]["namespace"] == found["metadata"]["namespace"]
        and p["spec"]["podSelector"]["matchLabels"].items() <= labels
    ]


API_SERVER = {"ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 6443}]}
DNS = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]


@pytest.mark.parametrize("name", ["grove-extender", "grove-scheduler", "grove-reconciler"])
def test_every_deployment_is_fenced_in_and_out(name: str) -> None:
    (policy,) = _policies_of(name)
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}, "both ways, or the missing way is open"
    egress = policy["spec"]["egress"]
    assert egress[0] == API_SERVER, "the API server first"
    if name == "grove-scheduler":
        extender_port = int(extender_args()["port"])
        to_extender, dns = egress[1:]
        assert to_extender["ports"] == [{"protocol": "TCP", "port": extender_port}]
        (peer,) = to_extender["to"]
        assert peer == {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "grove-extender"}}}
        assert dns["ports"] == DNS and dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
        assert urlparse(scheduler_config()["extenders"][0]["urlPrefix"]).hostname.endswith(".svc"), (
            "DNS is opened for the extender's Service name"
        )
    else:  # in-cluster config reaches the API server by address (KUBERNETES_SERVICE_HOST): no DNS
        assert egress == [API_SERVER]
    if name != "grove-extender":
        assert "ingress" not in policy["spec"], "nothing connects to it; the kubelet's probes come from its node"


@pytest.mark.parametrize("name", ["grove-extender", "grove-scheduler", "grove-reconciler"])
def test_every_container_has_requests_a_memory_limit_and_both_probes(name: str) -> None:
    for container in pod_spec(name)["containers"]:
        resources = container["resources"]
        assert {"cpu", "memory"} <= resources["requests"].keys(), container["name"]
        # No CPU limit by choice (the manifests say why); memory is bounded everywhere, and above the request.
        assert "memory" in resources["limits"] and "cpu" not in resources["limits"], container["name"]
        assert _bytes(resources["limits"]["memory"]) > _bytes(resources["requests"]["memory"])
        for probe in ("readinessProbe", "livenessProbe"):
            assert container[probe]["httpGet"]["path"] in ("/readyz", "/healthz", "/livez"), (container["name"], probe)


def _bytes(quantity: str) -> int:
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    return int(quantity[:-2]) * units[quantity[-2:]]


def test_certs_command_writes_the_secrets_the_deployments_mount() -> None:
    namespace = find("Namespace", "grove-system")["metadata"]["name"]
    host = urlparse(scheduler_config()["extenders"][0]["urlPrefix"]).hostname
    issued = issue(server_names=service_names("grove-extender", namespace), days=1)
    manifest = secrets_manifest(issued, namespace=namespace)
    secrets = {doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(manifest)}
    assert set(secrets) == {SERVER_SECRET, CLIENT_SECRET}
    for secret in secrets.values():
        assert secret["type"] == "kubernetes.io/tls" and secret["metadata"]["namespace"] == namespace
        assert set(secret["stringData"]) == TLS_KEYS
    server = x509.load_pem_x509_certificate(secrets[SERVER_SECRET]["stringData"]["tls.crt"].encode())
    client = x509.load_pem_x509_certificate(secrets[CLIENT_SECRET]["stringData"]["tls.crt"].encode())
    assert host in server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName
    )
    assert list(server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH
    ]
    assert list(client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    client_names = client.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert client_names.get_values_for_type(x509.DNSName) == [extender_args()["client-san"]]
    assert "PRIVATE KEY" not in secrets[SERVER_SECRET]["stringData"]["ca.crt"], "the CA's key is never written"


def test_cert_manager_issues_the_same_secrets_and_names() -> None:
    host = urlparse(scheduler_config()["extenders"][0]["urlPrefix"]).hostname
    certificates = {c["spec"]["secretName"]: c["spec"] for c in of_kind("Certificate")}
    assert {SERVER_SECRET, CLIENT_SECRET} <= set(certificates)
    server, client = certificates[SERVER_SECRET], certificates[CLIENT_SECRET]
    assert host in server["dnsNames"]
    assert set(server["dnsNames"]) == set(service_names("grove-extender", "grove-system"))
    assert "server auth" in server["usages"] and "client auth" in client["usages"]
    assert client["dnsNames"] == [extender_args()["client-san"]], "the name the extender checks on every connection"
    assert server["issuerRef"] == client["issuerRef"], "one CA signs both, so each side's ca.crt verifies the other"
    issuer = find("Issuer", server["issuerRef"]["name"])
    ca = certificates[issuer["spec"]["ca"]["secretName"]]
    assert ca["isCA"] is True


# --- Pod Security "restricted" ---------------------------------------------------------------------------------


def test_the_namespace_enforces_restricted_and_is_defined_once() -> None:
    (namespace,) = of_kind("Namespace")
    labels = namespace["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    ours = {"Deployment", "Service", "ServiceAccount", "NetworkPolicy", "Certificate", "Issuer", "Lease"}
    namespaces = {doc["metadata"]["namespace"] for _, doc in documents() if doc["kind"] in ours}
    assert namespaces == {namespace["metadata"]["name"]}, "everything that runs is under the enforced namespace"


@pytest.mark.parametrize("name", ["grove-extender", "grove-scheduler", "grove-reconciler"])
def test_every_deployment_is_pod_security_restricted(name: str) -> None:
    assert restricted_violations(pod_spec(name)) == []


def test_every_shipped_workload_is_checked() -> None:
    kinds = {"Pod", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicaSet"}
    workloads = sorted(doc["metadata"]["name"] for _, doc in documents() if doc["kind"] in kinds)
    assert workloads == ["grove-extender", "grove-reconciler", "grove-scheduler"]


def _loosened(change: str) -> dict[str, Any]:
    spec = copy.deepcopy(pod_spec("grove-extender"))
    container = spec["containers"][0]
    if change == "no-seccomp":
        del spec["securityContext"]["seccompProfile"]
    elif change == "escalation":
        container["securityContext"]["allowPrivilegeEscalation"] = True
    elif change == "root":
        spec["securityContext"]["runAsNonRoot"] = False
    elif change == "capabilities":
        container["securityContext"]["capabilities"] = {"add": ["NET_ADMIN"]}
    elif change == "host-path":
        spec["volumes"].append({"name": "h", "hostPath": {"path": "/"}})
    elif change == "latest":
        container["image"] = "grove-extender:latest"
    return spec


@pytest.mark.parametrize("change", ["no-seccomp", "escalation", "root", "capabilities", "host-path", "latest"])
def test_the_checker_catches_each_loosening(change: str) -> None:
    assert restricted_violations(_loosened(change)) != []


def test_images_are_the_project_version_or_pinned() -> None:
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    ours = [
        c["image"]
        for _, doc in documents()
        if doc["kind"] == "Deployment"
        for c in doc["spec"]["template"]["spec"]["containers"]
        if c["image"].split(":")[0].endswith("grove-extender")
    ]
    assert ours and set(ours) == {f"grove-extender:{version}"}


def test_runtime_image_installs_no_extra() -> None:
    lines = [line.strip() for line in (DEPLOY / "Dockerfile").read_text().splitlines()]
    installs = [line for line in lines if line.startswith("RUN pip install")]
    # The dependencies come from requirements.lock (tests/repo/test_requirements_lock.py), the project without extras.
    assert installs[-1] == "RUN pip install --no-index --no-deps --no-build-isolation . && rm -rf /src", installs
    assert not any(line.startswith("COPY benchmarks") for line in lines)
    dependencies = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not any(dep.startswith(("matplotlib", "cryptography")) for dep in dependencies)
