"""What we read from the API server and how: resource descriptors and a paginated, consistent list."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from api.grove import GROVE_API_VERSION, SCHEDULER_API_VERSION
from scheduler.kube.connect import READ_TIMEOUT
from scheduler.kube.decoding import JsonDecoder

__all__ = [
    "ALL_PODS",
    "CLUSTER_TOPOLOGY_BINDINGS",
    "DISRUPTION_BUDGETS",
    "HORIZONTAL_POD_AUTOSCALERS",
    "NODES",
    "PODCLIQUES",
    "PODCLIQUESCALINGGROUPS",
    "PODCLIQUESETS",
    "PODGANGS",
    "PODS",
    "PRIORITY_CLASSES",
    "ROLES",
    "ROLE_BINDINGS",
    "SERVICES",
    "SERVICE_ACCOUNTS",
    "ListExpiredError",
    "PageDecoder",
    "Resource",
    "list_all",
    "list_decoded",
]

log = logging.getLogger(__name__)

PAGE_SIZE = 500
_LIST_ATTEMPTS = 3

ItemT = TypeVar("ItemT")
PageDecoder = Callable[[bytes], tuple[Sequence[ItemT], dict[str, Any]]]
"""A list page's body → its items and its ``metadata`` (``resourceVersion``, ``continue``)."""


class ListExpiredError(RuntimeError):
    """A paginated list kept expiring (its continue token outlived etcd's compaction) and never completed."""


@dataclass(frozen=True)
class Resource:
    """A resource to list or watch, across all namespaces or in one."""

    kind: str
    api_version: str  # "v1" for core, "group/version" otherwise
    plural: str
    field_selector: str | None = None

    def list_call(self, api_client: client.ApiClient, *, namespace: str | None = None) -> Callable[..., Any]:
        """The generated client's list (and, with ``watch=True``, watch) method: cluster-wide, or in ``namespace``."""
        group, _, version = self.api_version.rpartition("/")
        if group:
            custom = client.CustomObjectsApi(api_client)
            if namespace:
                return functools.partial(custom.list_namespaced_custom_object, group, version, namespace, self.plural)
            return functools.partial(custom.list_cluster_custom_object, group, version, self.plural)
        core = client.CoreV1Api(api_client)
        if namespace:
            namespaced: dict[str, Callable[..., Any]] = {
                "pods": core.list_namespaced_pod,
                "services": core.list_namespaced_service,
                "serviceaccounts": core.list_namespaced_service_account,
            }
            return functools.partial(namespaced[self.plural], namespace)
        calls: dict[str, Callable[..., Any]] = {
            "nodes": core.list_node,
            "pods": core.list_pod_for_all_namespaces,
            "services": core.list_service_for_all_namespaces,
            "serviceaccounts": core.list_service_account_for_all_namespaces,
        }
        return calls[self.plural]

    def stamp(self, item: dict[str, Any]) -> dict[str, Any]:
        """Items of a core list come without ``kind``/``apiVersion``; a snapshot needs them on every item."""
        item.setdefault("kind", self.kind)
        item.setdefault("apiVersion", self.api_version)
        return item


NODES = Resource(kind="Node", api_version="v1", plural="nodes")
# Like kube-scheduler's own pod informer: finished pods hold no capacity, so they are neither listed nor watched
# (a pod that finishes arrives as DELETED).
PODS = Resource(
    kind="Pod", api_version="v1", plural="pods", field_selector="status.phase!=Succeeded,status.phase!=Failed"
)
# Pods in every phase: the reconciler and initc select theirs by label, and a pod that fails is news to them.
ALL_PODS = Resource(kind="Pod", api_version="v1", plural="pods")
PODGANGS = Resource(kind="PodGang", api_version=SCHEDULER_API_VERSION, plural="podgangs")
PODCLIQUESETS = Resource(kind="PodCliqueSet", api_version=GROVE_API_VERSION, plural="podcliquesets")
PODCLIQUES = Resource(kind="PodClique", api_version=GROVE_API_VERSION, plural="podcliques")
PODCLIQUESCALINGGROUPS = Resource(
    kind="PodCliqueScalingGroup", api_version=GROVE_API_VERSION, plural="podcliquescalinggroups"
)
# What a PodGang's spec.priorityClassName means (Grove puts the class on the PodGang, not on its pods).
PRIORITY_CLASSES = Resource(kind="PriorityClass", api_version="scheduling.k8s.io/v1", plural="priorityclasses")
# What evicting a pod is allowed to disrupt (preemption never chooses more victims than a budget allows).
DISRUPTION_BUDGETS = Resource(kind="PodDisruptionBudget", api_version="policy/v1", plural="poddisruptionbudgets")
# The reconciler's other children: the headless Service, the init container's ServiceAccount, Role and
# RoleBinding, and the HPAs of autoscaled cliques.
SERVICES = Resource(kind="Service", api_version="v1", plural="services")
SERVICE_ACCOUNTS = Resource(kind="ServiceAccount", api_version="v1", plural="serviceaccounts")
ROLES = Resource(kind="Role", api_version="rbac.authorization.k8s.io/v1", plural="roles")
ROLE_BINDINGS = Resource(kind="RoleBinding", api_version="rbac.authorization.k8s.io/v1", plural="rolebindings")
HORIZONTAL_POD_AUTOSCALERS = Resource(
    kind="HorizontalPodAutoscaler", api_version="autoscaling/v2", plural="horizontalpodautoscalers"
)
CLUSTER_TOPOLOGY_BINDINGS = Resource(
    kind="ClusterTopologyBinding", api_version=GROVE_API_VERSION, plural="clustertopologybindings"
)


def list_all(
    api_client: client.ApiClient,
    resource: Resource,
    *,
    page_size: int = PAGE_SIZE,
    on_page: Callable[[int], None] | None = None,
) -> tuple[list[dict[str, Any]], str]:
    """Every item of ``resource`` as a JSON dict (with ``kind``/``apiVersion``), and the list's resourceVersion."""
    decode = JsonDecoder(stamp=resource.stamp).page
    return list_decoded(api_client, resource, decode=decode, page_size=page_size, on_page=on_page)


def list_decoded(
    api_client: client.ApiClient,
    resource: Resource,
    *,
    decode: PageDecoder[ItemT],
    namespace: str | None = None,
    label_selector: str | None = None,
    page_size: int = PAGE_SIZE,
    on_page: Callable[[int], None] | None = None,
) -> tuple[list[ItemT], str]:
    """Every item of ``resource`` (in ``namespace``, matching ``label_selector``, when given) as ``decode`` makes
    it, and the list's resourceVersion (the point a watch resumes from).

    Pages of ``page_size`` keep the API server's memory flat on large clusters, and each page is decoded as it
    arrives, so a large cluster's raw JSON is never held whole. The pages form one consistent snapshot; if the
    continue token expires half-way, the list restarts from scratch rather than mixing two points in time.
    ``on_page`` hears the number of items fetched so far.
    """
    call = resource.list_call(api_client, namespace=namespace)
    for attempt in range(1, _LIST_ATTEMPTS + 1):
        items: list[ItemT] = []
        token: str | None = None
        version = ""
        while True:
            kwargs: dict[str, Any] = {"limit": page_size, "_preload_content": False, "_request_timeout": READ_TIMEOUT}
            if token:
                kwargs["_continue"] = token
            if resource.field_selector:
                kwargs["field_selector"] = resource.field_selector
            if label_selector:
                kwargs["label_selector"] = label_selector
            try:
                response = call(**kwargs)
            except ApiException as err:
                if err.status == 410 and token:
                    log.warning("list expired mid-way kind=%s attempt=%d; restarting", resource.kind, attempt)
                    break
                raise
            try:
                data = response.data
            finally:
                response.release_conn()
            page, metadata = decode(data)
            version = version or str(metadata.get("resourceVersion") or "")
            items.extend(page)
            if on_page is not None:
                on_page(len(items))
            token = metadata.get("continue") or None
            if token is None:
                return items, version
    raise ListExpiredError(
        f"listing {resource.plural} expired {_LIST_ATTEMPTS} times in a row: the API server compacts faster "
        "than the pages arrive; retry with a larger page size"
    )
