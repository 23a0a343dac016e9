"""Grove's pod-template hash: the go-spew port checked against real go-spew output, and the hash's properties.

``tests/fixtures/spew/golden.txt`` is what go-spew d8f796a (the version Grove builds with; Debian's
golang-github-davecgh-go-spew-dev has the same format.go and common.go) printed with apimachinery's ``ForHash``
config for the values in ``main.go.txt`` — pointers nil and not, in fields, slices and maps, embedded and named
types, unexported fields, and go-spew's quirk of printing no type after a slice that ends in a nil pointer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from api.grove import PodCliqueTemplate
from scheduler.reconcile.desired.template_hash import (
    _Spew,
    _template_dump,
    dump_for_hash,
    fnv64a,
    generation_hash,
    pcs_hashes,
    safe_encode,
    template_hash,
)
from tests.conftest import FIXTURES
from tests.reconcile.examples import example, pcs_model

_INNER = {"kind": "struct", "fields": [{"name": "Name", "type": "string", "json": "name"},
                                       {"name": "Val", "type": "*int64", "json": "val"}]}  # fmt: skip
_MIRROR: dict[str, dict[str, Any]] = {
    "main.Kind": {"kind": "named", "underlying": "string"},
    "main.Count": {"kind": "named", "underlying": "int32"},
    "main.Named": {"kind": "named", "underlying": "map[string]main.Count"},
    "main.Inner": _INNER,
    "main.Embedded": {"kind": "struct", "fields": [{"name": "Flag", "type": "bool", "json": "flag"}]},
    "main.Outer": {
        "kind": "struct",
        "fields": [
            {"name": "Embedded", "type": "main.Embedded", "inline": True},
            *({"name": n, "type": t, "json": n.lower()} for n, t in [
                ("Name", "string"), ("Kind", "main.Kind"), ("Ptr", "*int64"), ("NilPtr", "*int64"),
                ("PtrStr", "*string"), ("Items", "[]main.Inner"), ("NilItems", "[]main.Inner"), ("Empty", "[]string"),
                ("PtrItems", "[]*main.Inner"), ("Map", "map[string]string"), ("NilMap", "map[string]string"),
                ("StructMap", "map[main.Kind]main.Inner"), ("Named", "main.Named")]),
            {"name": "hidden", "type": "int64"},
            {"name": "After", "type": "*main.Inner", "json": "after"},
            {"name": "Last", "type": "string", "json": "last"},
        ],
    },
}  # fmt: skip
_VALUES: list[dict[str, Any]] = [
    {
        "flag": True,
        "name": "n",
        "kind": "K",
        "ptr": 30,
        "ptrstr": "",
        "items": [{"name": "a", "val": -7}, {"name": "b"}],
        "empty": [],
        "ptritems": [{"name": "p"}, None],
        "map": {"z": "1", "a": "2", "grove.io/x": "3"},
        "structmap": {"y": {"name": "y"}, "x": {"val": 30}},
        "named": {"gpu": 8, "cpu": 2},
        "hidden": 5,
        "after": {"name": "after"},
        "last": "end",
    },
    {},
    {"ptritems": [None], "last": "x"},
]


@pytest.mark.parametrize("case", range(len(_VALUES)))
def test_spew_port_prints_what_go_spew_prints(case: int) -> None:
    golden = (FIXTURES / "spew" / "golden.txt").read_text().splitlines()[case]
    spew = _Spew(_MIRROR)
    spew.format("*main.Outer", _VALUES[case])
    assert "".join(spew.out) == golden  # "hidden" is unexported: read by its Go name, as our decoders set them


def test_fnv64a_and_safe_encoding() -> None:
    assert fnv64a(b"") == 0xCBF29CE484222325 and fnv64a(b"a") == 0xAF63DC4C8601EC8C  # FNV-1a reference vectors
    # '0' is 48, 48 % 27 = 21 → '4'; '6' is 54, 54 % 27 = 0 → 'b'
    assert safe_encode("0123456789") == "456789bcdf"


def _template(**fields: Any) -> PodCliqueTemplate:
    spec = {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]}
    return PodCliqueTemplate.model_validate(
        {"name": "w", "spec": {"roleName": "w", "replicas": 1, "podSpec": spec}, **fields}
    )


def test_dump_decodes_quantities_as_parse_quantity_stores_them() -> None:
    dump = dump_for_hash(
        {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1.5Gi", "x": 8}}}]}}
    )
    # 500m: int64Amount{500, -3}, canonical (scale % 3 == 0, no trailing 000): the string is cached.
    assert "cpu:{i:(resource.int64Amount){value:(int64)500 scale:(resource.Scale)-3} d:(resource.infDecAmount)" in dump
    assert "s:(string)500m Format:(resource.Format)DecimalSI}" in dump
    # 1.5Gi: a fractional binary suffix takes inf.Dec: 1.5 × 2^30 = 1610612736, at scale 9.
    assert "abs:(big.nat)[1610612736000000000]} scale:(inf.Scale)9}" in dump
    assert "x:{i:(resource.int64Amount){value:(int64)8 scale:(resource.Scale)0}" in dump


def test_hash_is_groves_alphabet_and_tracks_what_grove_hashes() -> None:
    base = template_hash(_template(), None)
    assert len(base) >= 10 and set(base) <= set("456789bcdf")
    assert template_hash(_template(), None) == base  # deterministic
    assert template_hash(_template(), "high") != base  # the PodCliqueSet's priorityClassName is in the input
    assert template_hash(_template(labels={}), None) != base  # Go tells a nil map from an empty one
    assert template_hash(_template(labels={"b": "2", "a": "1"}), None) == template_hash(
        _template(labels={"a": "1", "b": "2"}), None
    )  # keys are sorted
    with_port = _template()
    with_port.spec.podSpec["containers"][0]["ports"] = [{"containerPort": 80}]
    explicit = _template()
    explicit.spec.podSpec["containers"][0]["ports"] = [{"containerPort": 80, "protocol": "TCP"}]
    assert template_hash(with_port, None) == template_hash(explicit, None)  # Grove's CRD defaults protocol: TCP
    unknown = _template()
    unknown.spec.podSpec["notAPodSpecField"] = 1
    assert template_hash(unknown, None) == base  # Go's decoder drops unknown fields


def test_dump_of_a_pod_template_spec_matches_go_spew_over_the_v0_35_5_structs() -> None:
    golden = (FIXTURES / "spew" / "podtemplatespec_golden.txt").read_text().splitlines()
    assert dump_for_hash({}) == golden[0]
    some = {
        "metadata": {"labels": {"b": "2", "a": "1"}},
        "spec": {
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "priorityClassName": "high",
            "containers": [
                {"name": "c", "image": "nginx", "args": [], "ports": [{"containerPort": 80, "protocol": "TCP"}]}
            ],
        },
    }
    assert dump_for_hash(some) == golden[1]


def test_generation_hash_is_groves_compute_hash_over_every_clique_template_in_order() -> None:
    # Grove's computeGenerationHash (podcliqueset/reconcilespec.go) hands every clique's PodTemplateSpec to the one
    # ComputeHash (internal/utils/kubernetes/pod.go), which writes each dump into a single FNV-64a in turn.
    pcs = pcs_model(example("training-scaled"))
    hashes = pcs_hashes(pcs)
    priority = pcs.spec.template.priorityClassName
    dumps = [_template_dump(clique, priority) for clique in pcs.spec.template.cliques]
    assert hashes.generation == safe_encode(str(fnv64a("".join(dumps).encode())))
    assert hashes.templates == {c.name: template_hash(c, priority) for c in pcs.spec.template.cliques}
    alone = pcs_model(example("training-scaled"))
    alone.spec.template.cliques = alone.spec.template.cliques[:1]
    alone.spec.template.podCliqueScalingGroups = []
    # One template: the generation hash is that clique's pod-template hash (the same ComputeHash of one dump).
    assert generation_hash(alone) == template_hash(alone.spec.template.cliques[0], priority)


@pytest.mark.parametrize(
    ("edit", "changes"),
    [
        pytest.param(lambda d: d["spec"]["template"]["cliques"][2]["spec"]["podSpec"]["containers"][0].update(
            image="training/worker:v2"), True, id="an image"),
        pytest.param(lambda d: d["spec"]["template"]["cliques"][0].update(labels={"tier": "ps"}), True,
                     id="a template label"),
        pytest.param(lambda d: d["spec"]["template"].update(priorityClassName="high"), True, id="the priority class"),
        pytest.param(lambda d: d["spec"]["template"]["cliques"].reverse(), True, id="the clique order"),
        pytest.param(lambda d: d["spec"].update(replicas=5), False, id="replicas"),
        pytest.param(lambda d: d["spec"]["template"]["cliques"][2]["spec"].update(replicas=6), False,
                     id="a clique's replicas"),
        pytest.param(lambda d: d["spec"]["template"].update(terminationDelay="1h"), False, id="terminationDelay"),
        pytest.param(lambda d: d["spec"].update(updateStrategy={"type": "OnDelete"}), False, id="the strategy"),
    ],
)  # fmt: skip
def test_generation_hash_changes_with_what_pods_are_made_of_and_nothing_else(
    edit: Callable[[dict[str, Any]], None], changes: bool
) -> None:
    document = example("training-scaled")
    before = generation_hash(pcs_model(document))
    edit(document)
    assert (generation_hash(pcs_model(document)) != before) is changes
