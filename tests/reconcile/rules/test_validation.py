"""Grove's PodCliqueSet validation rules (reference §4): each broken rule is named by its field path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from api.grove import ClusterTopologyBinding
from scheduler.reconcile.rules.fields import FieldError, go_duration_seconds
from scheduler.reconcile.rules.validation import validate
from tests.conftest import FIXTURES
from tests.reconcile.examples import example, pcs_model

Mutation = Callable[[dict[str, Any]], None]
T = "spec.template"

BINDING = ClusterTopologyBinding.model_validate(
    {
        "metadata": {"name": "topo"},
        "spec": {"levels": [{"domain": d, "key": f"example.com/{d}"} for d in ("zone", "block", "rack", "host")]},
    }
)


def _errors(document: dict[str, Any], *, creating: bool = True) -> list[str]:
    pcs = pcs_model(document)
    errors = validate(pcs, binding=BINDING, creating=creating, scheduler_names=frozenset({"grove"}))
    return [str(error) for error in errors]


def _clique(index: int, **spec: Any) -> Mutation:
    return lambda d: d["spec"]["template"]["cliques"][index]["spec"].update(spec)


def _group(**fields: Any) -> Mutation:
    return lambda d: d["spec"]["template"]["podCliqueScalingGroups"][0].update(fields)


def _template(**fields: Any) -> Mutation:
    return lambda d: d["spec"]["template"].update(fields)


def _pod_spec(index: int, **fields: Any) -> Mutation:
    return lambda d: d["spec"]["template"]["cliques"][index]["spec"]["podSpec"].update(fields)


def _env(*names: str) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        container = d["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["containers"][0]
        container["env"] = [{"name": name, "value": "x"} for name in names]

    return mutate


def _set(path: str, value: Any) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for part in parents:
            d = d[int(part)] if part.isdigit() else d[part]  # type: ignore[index]
        d[last] = value

    return mutate


def _topology(pcs: Any = None, group: Any = None, clique: Any = None) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        template = d["spec"]["template"]
        for target, value in ((template, pcs), (template["podCliqueScalingGroups"][0], group)):
            if value is not None:
                target["topologyConstraint"] = value
        if clique is not None:
            template["cliques"][1]["topologyConstraint"] = clique

    return mutate


CASES = [
    pytest.param(_set("metadata.name", "Bad_Name"), "metadata.name", "DNS subdomain", id="pcs-name"),
    pytest.param(_set("spec.replicas", -1), "spec.replicas", "≥ 0", id="negative-replicas"),
    pytest.param(_template(cliqueStartupType="Sometimes"), f"{T}.cliqueStartupType", "one of", id="startup-type"),
    pytest.param(_template(cliques=[], podCliqueScalingGroups=[]), f"{T}.cliques", "at least one", id="no-cliques"),
    pytest.param(_set("spec.template.cliques.1.name", "leader"), f"{T}.cliques[1].name", "duplicate", id="dup-name"),
    pytest.param(_clique(1, roleName="leader"), f"{T}.cliques[1].spec.roleName", "duplicate", id="dup-role"),
    pytest.param(_clique(1, replicas=-2), f"{T}.cliques[1].spec.replicas", "> 0", id="replicas"),
    pytest.param(_clique(1, minAvailable=0), f"{T}.cliques[1].spec.minAvailable", "> 0", id="min-zero"),
    pytest.param(_clique(1, minAvailable=4), f"{T}.cliques[1].spec.minAvailable", "≤ replicas", id="min-above"),
    pytest.param(
        _set("spec.template.cliques.0.labels", {"bad key!": "v"}), f"{T}.cliques[0].labels", "key", id="label-key"
    ),
    pytest.param(
        _set("spec.template.cliques.0.labels", {"ok": "no spaces"}), f"{T}.cliques[0].labels", "value", id="label-value"
    ),
    pytest.param(_pod_spec(0, nodeName="n1"), f"{T}.cliques[0].spec.podSpec.nodeName", "must not", id="node-name"),
    pytest.param(
        _pod_spec(0, topologySpreadConstraints=[{"maxSkew": 1}]),
        f"{T}.cliques[0].spec.podSpec.topologySpreadConstraints",
        "must not",
        id="spread",
    ),
    pytest.param(
        _pod_spec(0, schedulerName="volcano"),
        f"{T}.cliques[0].spec.podSpec.schedulerName",
        "not enabled",
        id="scheduler-unknown",
    ),
    pytest.param(
        _pod_spec(0, schedulerName="default-scheduler"),
        f"{T}.cliques.spec.podSpec.schedulerName",
        "have to be the same",
        id="scheduler-mixed",
    ),
    pytest.param(
        _pod_spec(0, containers=[]), f"{T}.cliques[0].spec.podSpec.containers", "at least one", id="no-containers"
    ),
    pytest.param(
        _pod_spec(0, containers=[{"image": "x"}]),
        f"{T}.cliques[0].spec.podSpec.containers[0].name",
        "needs a name",
        id="container-name",
    ),
    pytest.param(_env("1BAD"), f"{T}.cliques[0].spec.podSpec.containers[0].env[0].name", "not a valid", id="env-name"),
    pytest.param(_env("A", "A"), f"{T}.cliques[0].spec.podSpec.containers[0].env[1].name", "duplicate", id="env-dup"),
    pytest.param(_template(terminationDelay="-5m"), f"{T}.terminationDelay", "positive", id="delay-negative"),
    pytest.param(_template(terminationDelay="soon"), f"{T}.terminationDelay", "positive", id="delay-garbage"),
    pytest.param(_group(name="Model"), f"{T}.podCliqueScalingGroups[0].name", "DNS", id="pcsg-name"),
    pytest.param(
        _group(cliqueNames=["leader", "ghost"]),
        f"{T}.podCliqueScalingGroups[0].cliqueNames[1]",
        "unknown",
        id="pcsg-unknown-clique",
    ),
    pytest.param(_group(replicas=-1), f"{T}.podCliqueScalingGroups[0].replicas", "> 0", id="pcsg-replicas"),
    pytest.param(_group(minAvailable=3), f"{T}.podCliqueScalingGroups[0].minAvailable", "≤ replicas", id="pcsg-min"),
    pytest.param(
        _group(scaleConfig={"minReplicas": 1, "maxReplicas": 4}, minAvailable=2),
        f"{T}.podCliqueScalingGroups[0].scaleConfig.minReplicas",
        "≥ minAvailable",
        id="pcsg-scale-min",
    ),
    pytest.param(
        _clique(1, autoScalingConfig={"maxReplicas": 5}),
        f"{T}.podCliqueScalingGroups[0].cliqueNames[1]",
        "own autoScalingConfig",
        id="member-hpa",
    ),
    pytest.param(
        _set("metadata.name", "a-very-long-podcliqueset-name-indeed"),
        f"{T}.podCliqueScalingGroups[0].cliqueNames[0]",
        "≤ 45",
        id="name-budget",
    ),
    pytest.param(
        _topology(pcs={"pack": {"required": "rack"}}),
        f"{T}.topologyConstraint.topologyName",
        "required",
        id="tas-no-name",
    ),
    pytest.param(
        _topology(pcs={"topologyName": "other", "pack": {"required": "rack"}}),
        f"{T}.topologyConstraint.topologyName",
        "not found",
        id="tas-binding-missing",
    ),
    pytest.param(
        _topology(pcs={"topologyName": "topo", "pack": {"required": "numa"}}),
        f"{T}.topologyConstraint.pack.required",
        "not a level",
        id="tas-unknown-domain",
    ),
    pytest.param(
        _topology(pcs={"topologyName": "topo", "pack": {"required": "rack"}}, group={"pack": {"required": "block"}}),
        f"{T}.topologyConstraint.pack.required",
        "narrower",
        id="tas-pcs-narrower-than-group",
    ),
    pytest.param(
        _topology(
            pcs={"topologyName": "topo", "pack": {"preferred": "zone"}},
            group={"pack": {"preferred": "host"}},
            clique={"pack": {"preferred": "rack"}},
        ),
        f"{T}.podCliqueScalingGroups[0].topologyConstraint.pack.preferred",
        "narrower",
        id="tas-group-narrower-than-clique",
    ),
    pytest.param(
        _topology(
            pcs={"topologyName": "topo", "pack": {"required": "zone"}},
            clique={"topologyName": "x", "pack": {"required": "rack"}},
        ),
        f"{T}.cliques[1].topologyConstraint.topologyName",
        "must match",
        id="tas-names-differ",
    ),
    pytest.param(
        _topology(pcs={"topologyName": "topo", "pack": {}}),
        f"{T}.topologyConstraint.pack",
        "required or preferred",
        id="tas-empty-pack",
    ),
    pytest.param(
        _topology(pcs={"topologyName": "topo", "packDomain": "rack"}),
        f"{T}.topologyConstraint.packDomain",
        "forbidden on create",
        id="tas-pack-domain",
    ),
]


@pytest.mark.parametrize(("mutate", "path", "rule"), CASES)
def test_each_rule_names_the_field(mutate: Mutation, path: str, rule: str) -> None:
    document = example("multinode-aggregated")
    mutate(document)
    errors = _errors(document)
    assert any(e.startswith(f"{path}:") and rule in e for e in errors), errors


def test_examples_are_valid() -> None:
    for name in ("multinode-aggregated", "multinode-disaggregated", "training-scaled"):
        assert _errors(example(name)) == []


def test_startup_dependencies_are_checked_under_explicit_order() -> None:
    document = example("training-scaled")
    cliques = document["spec"]["template"]["cliques"]
    cliques[0]["spec"]["startsAfter"] = ["worker"]  # ps → worker → coordinator → ps
    errors = _errors(document)
    assert any(e.startswith(f"{T}.cliques:") and "cycle" in e for e in errors), errors
    cliques[0]["spec"]["startsAfter"] = ["ghost", "parameter-server", ""]
    errors = _errors(document)
    base = f"{T}.cliques[0].spec.startsAfter"
    assert any(e.startswith(f"{base}[0]:") and "unknown" in e for e in errors)
    assert any(e.startswith(f"{base}[1]:") and "itself" in e for e in errors)
    assert any(e.startswith(f"{base}[2]:") and "empty" in e for e in errors)


def test_create_only_rules_are_skipped_once_objects_exist() -> None:
    document = example("multinode-aggregated")
    _pod_spec(0, nodeName="n1")(document)
    assert _errors(document, creating=False) == []


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("4h", 14400.0),
        ("1h30m", 5400.0),
        ("1.5s", 1.5),
        ("-5m", -300.0),
        ("0", 0.0),
        ("300ms", 0.3),
        ("h", None),
        ("5", None),
    ],
)
def test_go_durations(text: str, seconds: float | None) -> None:
    assert go_duration_seconds(text) == (pytest.approx(seconds) if seconds is not None else None)


def _seed_pcs(file_prefix: str, name: str) -> dict[str, Any]:
    """A PodCliqueSet example of Grove's user docs (``tests/fixtures/grove-docs``, kept as the docs show it)."""
    document = yaml.safe_load((FIXTURES / "grove-docs" / f"{file_prefix}-{name}.yaml").read_text())
    assert isinstance(document, dict) and document.get("kind") == "PodCliqueSet", document
    document["metadata"].setdefault("namespace", "default")
    return document


def test_seed_examples_written_for_an_older_api_break_current_rules() -> None:
    # The PodCliqueSet concept doc's complete example gives a PCSG member its own HPA, which Grove now rejects.
    errors = _errors(_seed_pcs("001", "distributed-training"))
    assert any("own autoScalingConfig" in e for e in errors), errors
    # The core-concepts example's names exceed Grove's 45-character budget for pcs+pcsg+clique.
    errors = _errors(_seed_pcs("003", "distributed-training"))
    assert any("≤ 45" in e for e in errors), errors


@pytest.mark.parametrize("name", ["multinode-aggregated", "multinode-disaggregated"])
def test_shipped_examples_are_the_seed_examples_with_scheduler_grove(name: str) -> None:
    seed = _seed_pcs("002", name)
    shipped = example(name)
    for clique in shipped["spec"]["template"]["cliques"]:
        assert clique["spec"]["podSpec"].pop("schedulerName") == "grove"
    assert shipped == seed


def test_a_field_error_stays_on_one_line_whatever_the_keys_hold() -> None:
    # Found by test_dryrun_fuzz: a resource name "\n" in a container's requests split the error over two lines.
    error = FieldError("spec.template.cliques[0].spec.podSpec.containers[0].resources.requests.\n", "None\tis bad")
    assert str(error) == "spec.template.cliques[0].spec.podSpec.containers[0].resources.requests.\\n: None\\tis bad"
