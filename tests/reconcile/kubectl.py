"""What ``kubectl get`` and ``kubectl scale`` do, over real HTTP against the fake API server.

Resource names resolve as kubectl's discovery resolves them from the CRDs installed in a cluster — here the CRDs
we ship in ``deploy/crds`` (plural, singular, kind or short name), plus the core kinds the guides use. ``scale``
sends what ``kubectl scale`` sends: a merge patch of the ``scale`` subresource.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"
_CORE = {"pods": ("/api/v1", "pods"), "po": ("/api/v1", "pods"), "services": ("/api/v1", "services")}


def _discovery() -> dict[str, tuple[str, str]]:
    """Every name kubectl accepts for a shipped CRD → (API prefix, plural)."""
    names: dict[str, tuple[str, str]] = dict(_CORE)
    for path in sorted(CRDS.glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd or crd.get("kind") != "CustomResourceDefinition":  # kustomization.yaml lists them
                continue
            spec = crd["spec"]
            version = next(v["name"] for v in spec["versions"] if v.get("served"))
            target = (f"/apis/{spec['group']}/{version}", spec["names"]["plural"])
            given = spec["names"]
            for name in [given["plural"], given["singular"], given["kind"].lower(), *given.get("shortNames", [])]:
                names[name] = target
    return names


class Kubectl:
    def __init__(self, url: str, *, namespace: str = "default") -> None:
        self.url, self.namespace = url, namespace
        self.names = _discovery()

    def _send(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", content_type)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def _path(self, resource: str, name: str | None = None) -> str:
        if resource not in self.names:
            raise KeyError(f'error: the server doesn\'t have a resource type "{resource}"')
        prefix, plural = self.names[resource]
        return f"{prefix}/namespaces/{self.namespace}/{plural}" + (f"/{name}" if name else "")

    def get(self, resources: str, *, selector: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """``kubectl get pcs,pclq,pcsg,pg,pods [-l selector]``: the items of each, sorted by name as kubectl does."""
        query = f"?{urllib.parse.urlencode({'labelSelector': selector})}" if selector else ""
        found = {}
        for resource in resources.split(","):
            items = self._send("GET", self._path(resource) + query)["items"]
            found[resource] = sorted(items, key=lambda item: item["metadata"]["name"])
        return found

    def names_of(self, resources: str, *, selector: str | None = None) -> dict[str, list[str]]:
        return {
            kind: [i["metadata"]["name"] for i in items]
            for kind, items in self.get(resources, selector=selector).items()
        }

    def scale(self, resource: str, name: str, *, replicas: int) -> dict[str, Any]:
        """``kubectl scale <resource> <name> --replicas=N``; returns the Scale the server answered."""
        path = self._path(resource, name) + "/scale"
        body = {"spec": {"replicas": replicas}}
        result: dict[str, Any] = self._send("PATCH", path, body, content_type="application/merge-patch+json")
        return result
