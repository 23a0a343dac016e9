"""``grove-extender certs --apply``: the two mTLS Secrets written straight to the API server, so no private key is
ever on disk.

Each Secret is sent with server-side apply (field manager ``grove-extender-certs``, forced): the first run creates
it, a later run replaces its keys (a renewal) and leaves fields other managers own alone. The namespace must exist
already: it is the install's (``kubectl apply -k deploy/overlays/…``), with its Pod Security labels, and creating it
here would make one without them.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from urllib3.exceptions import HTTPError

from scheduler.kube.connect import ConnectError, describe_error, load_api_client

__all__ = ["FIELD_MANAGER", "Applied", "ApplyError", "apply_secrets", "kubeconfig_path"]

FIELD_MANAGER = "grove-extender-certs"
_APPLY = "application/apply-patch+yaml"  # a JSON body is YAML too


class ApplyError(RuntimeError):
    """The Secrets could not be written; the message says what to do."""


@dataclass(frozen=True)
class Applied:
    name: str
    created: bool  # False: it existed and its keys were replaced


def kubeconfig_path(given: str | None) -> str:
    """``--kubeconfig``, else ``$KUBECONFIG`` (its paths merged, as kubectl does), else ``~/.kube/config``: an operator
    runs this from their own machine, where kubectl's configuration is the one they mean."""
    from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION

    return given or KUBE_CONFIG_DEFAULT_LOCATION


def _encoded(secret: dict[str, Any]) -> dict[str, Any]:
    """``stringData`` as ``data``: server-side apply then owns the very field the API server stores."""
    body = {key: value for key, value in secret.items() if key != "stringData"}
    body["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in secret["stringData"].items()}
    return body


def apply_secrets(secrets: list[dict[str, Any]], *, kubeconfig: str) -> list[Applied]:
    """Each Secret applied in turn; ``ApplyError`` at the first the API server refuses (or cannot be reached)."""
    try:
        api_client = load_api_client(kubeconfig, pool_size=1)
    except ConnectError as err:
        raise ApplyError(str(err)) from None
    core = client.CoreV1Api(api_client)
    applied = []
    try:
        for secret in secrets:
            name, namespace = secret["metadata"]["name"], secret["metadata"]["namespace"]
            try:
                _, status, _ = core.patch_namespaced_secret_with_http_info(
                    name, namespace, _encoded(secret), field_manager=FIELD_MANAGER, force=True, _content_type=_APPLY
                )
            except client.ApiException as err:
                raise ApplyError(_explain(err, name=name, namespace=namespace)) from None
            except (HTTPError, OSError) as err:
                raise ApplyError(f"cannot reach the API server of {kubeconfig}: {describe_error(err)}") from None
            applied.append(Applied(name=name, created=status == 201))
    finally:
        api_client.close()  # type: ignore[no-untyped-call]
    return applied


def _explain(err: client.ApiException, *, name: str, namespace: str) -> str:
    said = describe_error(err)
    if err.status == 404:
        return (
            f"namespace {namespace} does not exist ({said}): install first, e.g. "
            f"kubectl apply -k deploy/overlays/standalone, then run this again"
        )
    if err.status == 403:
        return f"not allowed to write Secret {namespace}/{name} ({said}): run as a user who may (patch, create)"
    return f"Secret {namespace}/{name}: {said}"
