"""Grove's ``grove.io/pod-template-hash``, computed exactly as Grove computes it, so the Grove operator would see
our PodCliques and pods as current if it adopted them later.

Grove (``ComputePCLQPodTemplateHash``) builds a ``corev1.PodTemplateSpec`` from the clique template's labels,
annotations and pod spec, with the PodCliqueSet's ``priorityClassName`` in the spec; apimachinery's ``ComputeHash``
writes it with ``dump.ForHash`` — go-spew's ``%#v`` with sorted keys, methods disabled — into FNV-64a, and
``rand.SafeEncodeString`` maps each decimal digit of the sum to a letter. go-spew prints every field of every Go
struct, zero or not, with its Go type, so this module replays that printer (``_Spew``, a port of go-spew
d8f796a's ``format.go``) over the Go types of k8s.io/api v0.35.5 (``go_types.json``, written by ``go_types_gen``)
and decodes the pod spec's JSON the way Go's decoder fills those structs: absent is nil or zero, ``[]`` is an empty
non-nil slice, quantities are parsed as ``resource.ParseQuantity`` stores them, IntOrString by its JSON kind.
Before that, Grove's CRD defaults that change a Go value are applied, as the API server would have (``_CRD_DEFAULTS``).
The PodCliqueSet's generation hash (``generation_hash``), which starts a rolling update when it changes, is the same
hash over every clique template's dump in turn.

Exact except where Go's values cannot be known without running Go: a quantity that needs an arbitrary-precision
decimal (a fractional binary suffix such as ``1.5Gi``, or more digits than an int64 holds) is printed from our own
arithmetic of ``inf.Dec``, and a non-zero ``metav1.Time`` (never in a pod template) is not supported.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from api.grove import PodCliqueSet, PodCliqueTemplate
from scheduler.reconcile.desired.go_quantity import quantity_fields

__all__ = [
    "PodCliqueSetHashes",
    "dump_for_hash",
    "fnv64a",
    "generation_hash",
    "pcs_hashes",
    "safe_encode",
    "template_hash",
]

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's util/rand alphanums
_BASIC = {"string", "bool", "int", "int32", "int64", "uint", "uint32", "uint64", "byte", "float64"}
_CONTAINERS = ("containers", "initContainers", "ephemeralContainers")
# Grove's PodCliqueSet CRD (fcc3b3bb) sets these when absent; each changes the Go value (a non-nil pointer, a
# non-empty string). Its other defaults (`name: ""` and friends) equal Go's zero value and change nothing.
_CRD_DEFAULTS: tuple[tuple[str, ...], ...] = (
    *((kind, "[]", "ports", "[]", "protocol=TCP") for kind in _CONTAINERS),
    *((kind, "[]", "env", "[]", "valueFrom", "fileKeyRef", "optional=false") for kind in _CONTAINERS),
    *((kind, "[]", probe, "grpc", "service=") for kind in _CONTAINERS for probe in
      ("livenessProbe", "readinessProbe", "startupProbe")),
    ("volumes", "[]", "azureDisk", "fsType=ext4"),
    ("volumes", "[]", "azureDisk", "readOnly=false"),
    ("volumes", "[]", "iscsi", "iscsiInterface=default"),
    ("volumes", "[]", "rbd", "keyring=/etc/ceph/keyring"),
    ("volumes", "[]", "rbd", "pool=rbd"),
    ("volumes", "[]", "rbd", "user=admin"),
    ("volumes", "[]", "scaleIO", "fsType=xfs"),
    ("volumes", "[]", "scaleIO", "storageMode=ThinProvisioned"),
)  # fmt: skip


def fnv64a(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """apimachinery's ``SafeEncodeString``: each character ``c`` becomes ``alphabet[ord(c) % 27]``."""
    return "".join(_SAFE_ALPHABET[ord(char) % len(_SAFE_ALPHABET)] for char in text)


@cache
def _types() -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = json.loads(resources.files(__package__).joinpath("go_types.json").read_text())
    return table["types"]


def _apply_defaults(node: Any, path: tuple[str, ...]) -> None:
    step, rest = path[0], path[1:]
    if not rest:
        key, _, text = step.partition("=")
        if isinstance(node, dict) and key not in node:
            node[key] = {"false": False}.get(text, text)
        return
    if step == "[]":
        for item in node if isinstance(node, list) else []:
            _apply_defaults(item, rest)
    elif isinstance(node, dict) and isinstance(node.get(step), (dict, list)):
        _apply_defaults(node[step], rest)


def _int_or_string(raw: Any) -> dict[str, Any]:
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        return {}
    return {"Type": 0, "IntVal": raw} if isinstance(raw, int) else {"Type": 1, "StrVal": raw}


# Structs reached only through those decoders: their fields (embedded ones too) are read by Go field name.
_BY_NAME = frozenset(
    {"resource.Quantity", "resource.int64Amount", "resource.infDecAmount", "inf.Dec", "big.Int", "meta_v1.Time",
     "time.Time", "intstr.IntOrString"}
)  # fmt: skip
# Types Go fills through their own UnmarshalJSON: JSON → the dict of their Go fields.
_CUSTOM: dict[str, Callable[[Any], dict[str, Any]]] = {
    "resource.Quantity": quantity_fields,
    "intstr.IntOrString": _int_or_string,
    "meta_v1.Time": lambda raw: {},  # zero only (see module doc)
}


class _Spew:
    """go-spew's formatState for ``%#v`` (``ConfigState{SortKeys, DisableMethods, SpewKeys, …}``), over Go types by
    name and values as decoded JSON (``None`` is Go's nil or zero)."""

    def __init__(self, types: Mapping[str, dict[str, Any]]) -> None:
        self.types = types
        self.out: list[str] = []
        self.ignore_next_type = False

    @staticmethod
    def type_name(go_type: str) -> str:
        return go_type.replace("meta_v1.", "v1.")  # Go prints package names: metav1.Time is "v1.Time"

    def _resolve(self, go_type: str) -> tuple[str, dict[str, Any] | None]:
        """The kind-bearing form of ``go_type``: a basic or composite type expression, or a struct's spec."""
        while go_type in self.types:
            spec = self.types[go_type]
            if spec["kind"] == "named":
                go_type = spec["underlying"]
            elif spec["kind"] == "struct":
                return go_type, spec
            elif spec["kind"] == "slice":
                return f"[]{spec['elem']}", None
            else:
                return spec["kind"], None
        return go_type, None

    def format(self, go_type: str, value: Any) -> None:
        if go_type.startswith("*"):
            self._pointer(go_type, value)
            return
        if not self.ignore_next_type:
            self.out.append(f"({self.type_name(go_type)})")
        self.ignore_next_type = False
        if go_type in _CUSTOM and value is not None and not isinstance(value, dict):
            value = _CUSTOM[go_type](value)
        kind, struct = self._resolve(go_type)
        if struct is not None:
            self._struct(struct, value if isinstance(value, dict) else {}, by_name=kind in _BY_NAME)
        elif kind.startswith("[]"):
            self._slice(kind[2:], value)
        elif kind.startswith("map["):
            self._map(kind, value)
        elif kind == "bool":
            self.out.append("true" if value is True else "false")
        elif kind == "string":
            self.out.append(value if isinstance(value, str) else "")
        elif kind in _BASIC:
            number = value if isinstance(value, int) and not isinstance(value, bool) else 0
            self.out.append(str(number))
        else:  # an opaque external type (time.Location) is only ever reached through a nil pointer
            raise ValueError(f"cannot print a value of Go type {go_type}")

    def _pointer(self, go_type: str, value: Any) -> None:
        if value is None and self.ignore_next_type:
            self.out.append("<nil>")
            return  # as go-spew: ignoreNextType stays set
        if not self.ignore_next_type:
            self.out.append(f"({self.type_name(go_type)})" if value is None else f"(*{self.type_name(go_type[1:])})")
        else:
            self.out.append("<*>")
        if value is None:
            self.out.append("<nil>")
            return
        self.ignore_next_type = True
        self.format(go_type[1:], value)

    def _slice(self, elem: str, value: Any) -> None:
        if not isinstance(value, list):
            self.out.append("<nil>")
            return
        self.out.append("[")
        for index, item in enumerate(value):
            if index:
                self.out.append(" ")
            self.ignore_next_type = True
            self.format(elem, item)
        self.out.append("]")

    def _map(self, kind: str, value: Any) -> None:
        if not isinstance(value, dict):
            self.out.append("<nil>")
            return
        key_type, elem = kind[4:].split("]", 1)
        self.out.append("map[")
        for index, key in enumerate(sorted(value)):  # string keys: Go compares bytes, Python code points: same order
            if index:
                self.out.append(" ")
            self.ignore_next_type = True
            self.format(key_type, key)
            self.out.append(":")
            self.ignore_next_type = True
            self.format(elem, value[key])
        self.out.append("]")

    def _struct(self, spec: dict[str, Any], value: dict[str, Any], *, by_name: bool) -> None:
        self.out.append("{")
        for index, field in enumerate(spec["fields"]):
            if index:
                self.out.append(" ")
            self.out.append(f"{field['name']}:")
            if by_name or not (field.get("inline") or "json" in field):
                inner: Any = value.get(field["name"])  # our decoders' fields; unexported ones stay zero
            elif field.get("inline"):
                inner = value  # promoted fields read the same JSON object
            else:
                inner = value.get(field["json"])
            self.format(field["type"], inner)
        self.out.append("}")


def dump_for_hash(template: Mapping[str, Any]) -> str:
    """go-spew's ``%#v`` of ``&corev1.PodTemplateSpec`` decoded from ``template`` (``{metadata, spec}`` JSON)."""
    spew = _Spew(_types())
    spew.format("*v1.PodTemplateSpec", dict(template))
    return "".join(spew.out)


def _template_dump(template: PodCliqueTemplate, priority_class_name: str | None) -> str:
    """The dump Grove hashes for one clique template: its labels, annotations and pod spec, with the PodCliqueSet's
    ``priorityClassName``, as a ``PodTemplateSpec``."""
    spec = json.loads(json.dumps(template.spec.podSpec))  # a private deep copy
    for path in _CRD_DEFAULTS:
        _apply_defaults(spec, path)
    spec["priorityClassName"] = priority_class_name or ""
    metadata: dict[str, Any] = {}
    # Go keeps nil (absent) and empty ({}) maps apart, and so does the dump.
    for key in ("labels", "annotations"):
        if key in template.model_fields_set:
            metadata[key] = getattr(template, key)
    return dump_for_hash({"metadata": metadata, "spec": spec})


def _hash(*dumps: str) -> str:
    """Grove's ``ComputeHash``: every dump into one FNV-64a, in order, with nothing
    between them; the decimal sum, safe-encoded."""
    return safe_encode(str(fnv64a("".join(dumps).encode())))


def template_hash(template: PodCliqueTemplate, priority_class_name: str | None) -> str:
    """Grove's ``grove.io/pod-template-hash`` of one clique template (``ComputePCLQPodTemplateHash``)."""
    return _hash(_template_dump(template, priority_class_name))


@dataclass(frozen=True)
class PodCliqueSetHashes:
    templates: dict[str, str]  # each clique template's pod-template hash, by clique name
    generation: str  # the PodCliqueSet's generation hash


def pcs_hashes(pcs: PodCliqueSet) -> PodCliqueSetHashes:
    """Each clique template's hash and the generation hash, from one dump per template: not one per PodClique (a
    100-replica PodCliqueSet has hundreds of PodCliques and a handful of templates), nor one per hash."""
    priority = pcs.spec.template.priorityClassName
    dumps = {clique.name: _template_dump(clique, priority) for clique in pcs.spec.template.cliques}
    return PodCliqueSetHashes(
        templates={name: _hash(dump) for name, dump in dumps.items()}, generation=_hash(*dumps.values())
    )


def generation_hash(pcs: PodCliqueSet) -> str:
    """Grove's ``status.currentGenerationHash`` (``computeGenerationHash``): every clique template's dump, in
    template order, into one hash. Only what a pod is made of counts, so a change to it (an image, an env var, a
    label of the template, the priority class) starts a rolling update, and a change to anything else (replicas,
    ``terminationDelay``) does not."""
    return pcs_hashes(pcs).generation
