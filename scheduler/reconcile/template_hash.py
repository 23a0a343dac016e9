"""Grove's ``grove.io/pod-template-hash``: FNV-64a of a pod template, written in Kubernetes' safe alphabet.

Grove (``ComputePCLQPodTemplateHash``) hashes a ``PodTemplateSpec`` made of the clique template's labels,
annotations and pod spec, with the PodCliqueSet's ``priorityClassName`` set in the spec; apimachinery's
``ComputeHash`` feeds FNV-64a and ``rand.SafeEncodeString`` maps each decimal digit of the sum to a letter.
"""

from __future__ import annotations

import json

from api.grove import PodCliqueTemplate

__all__ = ["fnv64a", "safe_encode", "template_hash"]

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's util/rand alphanums


def fnv64a(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """apimachinery's ``SafeEncodeString``: each character ``c`` becomes ``alphabet[ord(c) % 27]``."""
    return "".join(_SAFE_ALPHABET[ord(char) % len(_SAFE_ALPHABET)] for char in text)


def template_hash(template: PodCliqueTemplate, priority_class_name: str | None) -> str:
    spec = dict(template.spec.podSpec)
    spec["priorityClassName"] = priority_class_name or ""
    material = {"labels": template.labels, "annotations": template.annotations, "spec": spec}
    return safe_encode(str(fnv64a(json.dumps(material, sort_keys=True).encode())))
