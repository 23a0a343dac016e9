"""A garbage-collector stand-in: when an owner is deleted, its dependents are deleted too (background
propagation), as kube-controller-manager's garbage collector does. There is none here, and the product relies on
it: the reconciler deletes a PodClique to recycle a gang, and the PodClique's pods must go with it.

It follows only the owners the product creates dependents for (PodCliqueSets, PodCliqueScalingGroups, PodCliques)
and only deletions: a dependent whose owner was never there is not its business. A deleted dependent that owns
others (a PodClique) is in turn followed by its own deletion event.
"""

from __future__ import annotations

from typing import Any

from benchmarks.controlplane.agents import Agent, Handler

__all__ = ["GarbageCollector"]

OWNERS = (
    "/apis/grove.io/v1alpha1/podcliquesets",
    "/apis/grove.io/v1alpha1/podcliquescalinggroups",
    "/apis/grove.io/v1alpha1/podcliques",
)
DEPENDENTS = (
    "/api/v1/namespaces/{ns}/pods",
    "/api/v1/namespaces/{ns}/services",
    "/api/v1/namespaces/{ns}/serviceaccounts",
    "/api/v1/namespaces/{ns}/secrets",
    "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
    "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliquescalinggroups",
    "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliques",
    "/apis/scheduler.grove.io/v1alpha1/namespaces/{ns}/podgangs",
    "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
)


class GarbageCollector(Agent):
    name = "garbage-collector"

    def watches(self) -> list[tuple[str, dict[str, str], Handler]]:
        return [(path, {}, self._seen) for path in OWNERS]

    def _seen(self, kind: str, owner: dict[str, Any]) -> None:
        if kind == "DELETED":
            self.spawn(self._collect(owner["metadata"]["namespace"], owner["metadata"]["uid"]))

    async def _collect(self, namespace: str, uid: str) -> None:
        assert self.client is not None
        for template in DEPENDENTS:
            path = template.format(ns=namespace)
            for item in (await self.client.acall("GET", path))["items"]:
                refs = item["metadata"].get("ownerReferences") or []
                if refs and all(ref.get("uid") == uid for ref in refs):
                    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
                    reply = await self.client.arequest("DELETE", f"{path}/{item['metadata']['name']}", body)
                    if reply.status >= 400 and reply.status != 404:
                        self.errors.append(f"collecting {path}/{item['metadata']['name']}: HTTP {reply.status}")
