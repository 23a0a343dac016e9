"""Regenerate ``go_types.json``: the Go types a ``corev1.PodTemplateSpec`` is made of, as Grove compiles them.

Grove's pod-template hash is FNV-64a over go-spew's ``%#v`` dump of a ``PodTemplateSpec`` (``template_hash``), and
that dump prints every field of every Go struct reached, zero or not, with its Go type. Reproducing it needs the
exact structs of the k8s.io/api and k8s.io/apimachinery versions Grove builds with (v0.35.5 at Grove fcc3b3bb:
a newer API adds fields, and every hash changes). This reads their Go source and writes, per reachable type, its
kind and (for structs) its fields in declaration order with their JSON names. Run by hand when Grove moves:

    python -m scheduler.reconcile.desired.go_types_gen --api DIR --apimachinery DIR \
        > scheduler/reconcile/desired/go_types.json

where DIR are checkouts of kubernetes/api and kubernetes/apimachinery at Grove's version (its operator/go.mod).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "parse_go_types"]

_TYPE_DECL = re.compile(r"^type (\w+) (struct \{|\S.*)$")
_FIELD = re.compile(r"^(?:(?P<name>\w+)\s+)?(?P<type>[\w.*\[\]]+(?:\[[\w.*]+\][\w.*\[\]]+)?)\s*(?:`(?P<tag>[^`]*)`)?$")
_JSON_TAG = re.compile(r'json:"([^"]*)"')

# Files per package, and the package name Go prints (``Type().String()`` uses the package *name*).
_META = ["pkg/apis/meta/v1/types.go", "pkg/apis/meta/v1/time.go", "pkg/apis/meta/v1/micro_time.go"]
_SOURCES = {
    "corev1": ("api", ["core/v1/types.go"], "v1"),
    "metav1": ("apimachinery", _META, "v1"),
    "resource": ("apimachinery", ["pkg/api/resource/quantity.go", "pkg/api/resource/amount.go"], "resource"),
    "intstr": ("apimachinery", ["pkg/util/intstr/intstr.go"], "intstr"),
    "types": ("apimachinery", ["pkg/types/uid.go"], "types"),
}


def _fields(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"kind": "struct", "fields": [{"name": name, "type": go_type} for name, go_type in pairs]}


# Standard-library and third-party structs reached through unexported fields; written out by hand (checked against
# real Go: tests/fixtures/spew/).
_EXTERNAL: dict[str, dict[str, Any]] = {
    "time.Time": _fields(("wall", "uint64"), ("ext", "int64"), ("loc", "*time.Location")),
    "time.Location": {"kind": "opaque"},
    "inf.Dec": _fields(("unscaled", "big.Int"), ("scale", "inf.Scale")),
    "inf.Scale": {"kind": "int32"},
    "big.Int": _fields(("neg", "bool"), ("abs", "big.nat")),
    "big.nat": {"kind": "slice", "elem": "big.Word"},
    "big.Word": {"kind": "uint"},
}
_BASIC = {"string", "bool", "int", "int32", "int64", "uint", "uint32", "uint64", "float64", "byte"}


def _strip(line: str) -> str:
    return line.split("//", 1)[0].strip()


def parse_go_types(source: str, *, package: str, alias: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every ``type`` declaration of ``source``: structs with their fields, named basic/map/slice types."""
    found: dict[str, dict[str, Any]] = {}
    lines = re.sub(r"/\*.*?\*/", "", source, flags=re.DOTALL).splitlines()
    index = 0
    while index < len(lines):
        match = _TYPE_DECL.match(_strip(lines[index]))
        index += 1
        if not match:
            continue
        name, rest = match.groups()
        qualified = f"{package}.{name}"
        if rest != "struct {":
            found[qualified] = {"kind": "named", "underlying": _qualify(rest.strip(), package, alias)}
            continue
        fields: list[dict[str, Any]] = []
        while index < len(lines) and _strip(lines[index]) != "}":
            line = _strip(lines[index])
            index += 1
            if not line:
                continue
            field = _FIELD.match(line)
            if field is None:  # interface{}, func types…: never reached from a PodTemplateSpec (checked later)
                fields.append({"name": line, "type": f"unsupported {line}"})
                continue
            go_type = _qualify(field["type"], package, alias)
            tag = _JSON_TAG.search(field["tag"] or "")
            json_name = tag.group(1).split(",")[0] if tag else None
            embedded = field["name"] is None
            entry: dict[str, Any] = {
                "name": field["name"] or go_type.lstrip("*").rsplit(".", 1)[-1],
                "type": go_type,
            }
            if embedded and not json_name:
                entry["inline"] = True  # promoted fields (`json:",inline"` or an untagged embedded struct)
            elif json_name and json_name != "-":
                entry["json"] = json_name
            fields.append(entry)
        found[qualified] = {"kind": "struct", "fields": fields}
    return found


def _qualify(expression: str, package: str, alias: dict[str, str]) -> str:
    """``[]Container`` → ``[]v1.Container``; ``metav1.Time`` → ``v1.Time`` (Go prints package names, not paths)."""
    if expression.startswith("*"):
        return "*" + _qualify(expression[1:], package, alias)
    if expression.startswith("[]"):
        return "[]" + _qualify(expression[2:], package, alias)
    if expression.startswith("map["):
        key, value = expression[4:].split("]", 1)
        return f"map[{_qualify(key, package, alias)}]{_qualify(value, package, alias)}"
    if expression in _BASIC:
        return expression
    if "." in expression:
        prefix, name = expression.split(".", 1)
        return f"{alias.get(prefix, prefix)}.{name}"
    return f"{package}.{expression}"


def _reachable(types: dict[str, dict[str, Any]], root: str) -> dict[str, dict[str, Any]]:
    kept: dict[str, dict[str, Any]] = {}
    pending = [root]
    while pending:
        expression = pending.pop()
        while expression.startswith(("*", "[]")):
            expression = expression.lstrip("*").removeprefix("[]")
        if expression.startswith("map["):
            key, value = expression[4:].split("]", 1)
            pending += [key, value]
            continue
        if expression in _BASIC or expression in kept:
            continue
        if expression.startswith("unsupported ") or expression not in types:
            raise ValueError(f"a PodTemplateSpec reaches a type this generator cannot describe: {expression}")
        kept[expression] = types[expression]
        spec = types[expression]
        pending += [f["type"] for f in spec.get("fields", [])]
        pending += [spec[k] for k in ("underlying", "elem") if k in spec]
    return dict(sorted(kept.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api", type=Path, required=True, help="kubernetes/api checkout at Grove's version")
    parser.add_argument("--apimachinery", type=Path, required=True, help="kubernetes/apimachinery checkout")
    args = parser.parse_args(argv)
    roots = {"api": args.api, "apimachinery": args.apimachinery}
    # Source package alias → the package name Go prints, for references between the packages.
    alias = {"metav1": "meta_v1", "resource": "resource", "intstr": "intstr", "types": "types", "time": "time"}
    types: dict[str, dict[str, Any]] = dict(_EXTERNAL)
    for key, (repo, files, _) in _SOURCES.items():
        package = "meta_v1" if key == "metav1" else "v1" if key == "corev1" else key
        for name in files:
            types.update(parse_go_types((roots[repo] / name).read_text(), package=package, alias=alias))
    table = _reachable(types, "v1.PodTemplateSpec")
    json.dump({"go_version_note": "k8s.io/api and k8s.io/apimachinery v0.35.5", "types": table}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
