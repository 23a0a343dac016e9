"""What a recorded snapshot must not carry, removed before it is written.

A snapshot is shared (attached to issues, committed as a benchmark), so it keeps what placement needs and drops
what could leak or only bloats: container environment *values* (names stay: they show the workload's shape),
container commands and arguments (credentials are often passed as flags), the last-applied-configuration
annotation (a full copy of the object, env values included), annotations that look like credentials,
``managedFields``, and the list of images cached on each node. Secrets are never read in the first place.
This applies at any depth, so the pod templates inside PodCliqueSets are scrubbed like pods.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["scrub"]

_CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})
_CONTAINER_DROPS = ("command", "args")
_SECRET_ANNOTATION = re.compile(r"token|secret|password|credential|last-applied-configuration", re.IGNORECASE)


def _scrub_container(container: dict[str, Any]) -> dict[str, Any]:
    cleaned = {key: _walk(value) for key, value in container.items() if key not in _CONTAINER_DROPS}
    if isinstance(container.get("env"), list):
        cleaned["env"] = [{"name": var["name"]} for var in container["env"] if isinstance(var, dict) and "name" in var]
    return cleaned


def _scrub_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    cleaned = {key: _walk(value) for key, value in metadata.items() if key != "managedFields"}
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        cleaned["annotations"] = {k: v for k, v in annotations.items() if not _SECRET_ANNOTATION.search(k)}
    return cleaned


def _walk(value: Any) -> Any:
    if isinstance(value, list):
        return [_walk(item) for item in value]
    if not isinstance(value, dict):
        return value
    cleaned: dict[str, Any] = {}
    for key, item in value.items():
        if key in _CONTAINER_LISTS and isinstance(item, list):
            cleaned[key] = [_scrub_container(c) if isinstance(c, dict) else c for c in item]
        elif key == "metadata" and isinstance(item, dict):
            cleaned[key] = _scrub_metadata(item)
        else:
            cleaned[key] = _walk(item)
    return cleaned


def scrub(item: dict[str, Any]) -> dict[str, Any]:
    """A copy of one API object without the fields a snapshot must not carry."""
    cleaned: dict[str, Any] = _walk(item)
    if cleaned.get("kind") == "Node" and isinstance(cleaned.get("status"), dict):
        cleaned["status"].pop("images", None)
    return cleaned
