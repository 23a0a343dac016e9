"""A checker for the shipped CRDs' structural schemas: what kube-apiserver would reject or silently prune.

It covers the part of OpenAPI v3 validation our CRDs use (type, required, enum, properties, additionalProperties,
items, ``x-kubernetes-preserve-unknown-fields``), so tests can hold manifests, examples, snapshots and our own status
writes to the schema an API server would apply, without a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO_ROOT

CRDS = REPO_ROOT / "deploy" / "crds"
_PRUNED = ": unknown field (would be pruned)"
_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


def crd_schema(path: Path) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of the single served version of the CRD in ``path``."""
    (crd,) = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def violations(value: Any, schema: dict[str, Any], where: str = "") -> list[str]:
    """Every rule of ``schema`` that ``value`` breaks, each as ``<path>: <rule>``; empty when the API would take it."""
    expected = schema.get("type")
    if expected and not isinstance(value, _TYPES[expected]):
        return [f"{where}: want {expected}"]
    found = [f"{where}.{key}: required" for key in schema.get("required", []) if key not in value]
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} not in {schema['enum']}")
    if isinstance(value, dict):
        found.extend(_object_violations(value, schema, where))
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found.extend(violations(item, schema["items"], f"{where}[{index}]"))
    return found


def _object_violations(value: dict[str, Any], schema: dict[str, Any], where: str) -> list[str]:
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    keeps_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    found: list[str] = []
    for key, item in value.items():
        if where == "" and key == "metadata":
            continue  # ObjectMeta is the API server's own, never pruned by a CRD schema
        if key in properties:
            found.extend(violations(item, properties[key], f"{where}.{key}"))
        elif isinstance(extra, dict):
            found.extend(violations(item, extra, f"{where}.{key}"))
        elif not keeps_unknown:
            found.append(f"{where}.{key}{_PRUNED}")
    return found


def pruned(value: Any, schema: dict[str, Any]) -> list[str]:
    """Only the paths the API server would silently drop from ``value``."""
    return [v.removesuffix(_PRUNED) for v in violations(value, schema) if v.endswith(_PRUNED)]
