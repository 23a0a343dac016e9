"""One configured, pooled ``ApiClient`` per process, and the JSON plumbing every call over it shares."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

__all__ = ["READ_TIMEOUT", "WRITE_TIMEOUT", "ConnectError", "describe_error", "load_api_client", "response_json"]

log = logging.getLogger(__name__)

# A gang's release binds many pods in parallel, and the watches hold three connections for good:
# the client's default pool (five connections per CPU) would make binds queue for a connection on a small node.
POOL_SIZE = 64

# (connect, read) seconds. Writes sit on kube-scheduler's bind path, whose extender httpTimeout is 5 s: a write that
# has not answered in 4 s is reported as failed so the bind call can still answer in time.
WRITE_TIMEOUT = (2.0, 4.0)
READ_TIMEOUT = (5.0, 60.0)


class ConnectError(RuntimeError):
    """No usable cluster configuration; the message says what to pass instead."""


def load_api_client(kubeconfig: str | None, *, pool_size: int = POOL_SIZE) -> client.ApiClient:
    """An ``ApiClient`` from ``kubeconfig`` (its current context), or from the pod's service account when None."""
    configuration = client.Configuration()
    try:
        if kubeconfig is None:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, client_configuration=configuration, persist_config=False
            )
    except (ConfigException, OSError) as err:
        where = kubeconfig or "in-cluster service account"
        hint = (
            "pass --kubeconfig FILE when running outside a cluster"
            if kubeconfig is None and not os.environ.get("KUBERNETES_SERVICE_HOST")
            else "check the file and its current context"
        )
        raise ConnectError(f"cannot load Kubernetes config from {where}: {err}; {hint}") from None
    configuration.connection_pool_maxsize = pool_size
    # TCP keep-alive notices an API server that vanished under a long, quiet watch.
    configuration.keep_alive = True
    api_client = client.ApiClient(configuration)
    api_client.user_agent = "grove-extender"
    log.info("kubernetes client host=%s pool=%d", configuration.host, pool_size)
    return api_client


def response_json(response: Any) -> Any:
    """Decode a raw (``_preload_content=False``) response body and give its connection back to the pool."""
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()


def describe_error(err: Exception) -> str:
    """One line for a log: the client's own ``str()`` of an ApiException spans headers and body. The API server's
    own message is kept: for a 403 it names the identity, verb and resource that RBAC refused, which is what an
    operator has to grant ("leases ... is forbidden: User ... cannot get resource "leases" ...")."""
    if isinstance(err, ApiException):
        said = _status_message(err.body)
        return f"HTTP {err.status} {err.reason}" + (f": {said}" if said else "")
    return f"{type(err).__name__}: {err}"


def _status_message(body: Any) -> str:
    """The ``message`` of a ``v1.Status`` body, on one line and at most 300 characters; empty if there is none."""
    try:
        message = json.loads(body).get("message") if body else None
    except (ValueError, TypeError, AttributeError):
        return ""
    return " ".join(str(message).split())[:300] if message else ""
