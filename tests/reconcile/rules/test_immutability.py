"""Grove's update rules, enforced against the shape the reconciler accepted (reference §4 "On update")."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.reconcile.rules.immutability import shape, update_errors
from tests.reconcile.examples import cluster, example, pcs_model, pod_names, reconciler

T = "spec.template"
Mutation = Callable[[dict[str, Any]], None]


def _template(d: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = d["spec"]["template"]
    return template


def _errors(before: dict[str, Any], mutate: Mutation) -> list[str]:
    after = copy.deepcopy(before)
    mutate(after)
    return [str(e) for e in update_errors(shape(pcs_model(before)), pcs_model(after))]


def _add_clique(d: dict[str, Any]) -> None:
    extra = copy.deepcopy(_template(d)["cliques"][0])
    extra["name"] = extra["spec"]["roleName"] = "router"
    _template(d)["cliques"].append(extra)


def _set_clique(index: int, **spec: Any) -> Mutation:
    return lambda d: _template(d)["cliques"][index]["spec"].update(spec)


def _set_group(**fields: Any) -> Mutation:
    return lambda d: _template(d)["podCliqueScalingGroups"][0].update(fields)


REFUSED = [
    pytest.param(_add_clique, f"{T}.cliques:", "added ['router']", id="clique-added"),
    pytest.param(lambda d: _template(d)["cliques"].pop(), f"{T}.cliques:", "removed ['worker']", id="clique-removed"),
    pytest.param(_set_clique(0, roleName="boss"), f"{T}.cliques[0].spec.roleName:", "immutable", id="role"),
    pytest.param(_set_clique(1, minAvailable=2), f"{T}.cliques[1].spec.minAvailable:", "was 3", id="clique-min"),
    pytest.param(_set_group(minAvailable=2), f"{T}.podCliqueScalingGroups[0].minAvailable:", "was 1", id="group-min"),
    pytest.param(
        _set_group(cliqueNames=["leader"]),
        f"{T}.podCliqueScalingGroups[0].cliqueNames:",
        "immutable",
        id="group-members",
    ),
    pytest.param(
        lambda d: _template(d).update(cliqueStartupType="CliqueStartupTypeInOrder"),
        f"{T}.cliqueStartupType:",
        "immutable",
        id="startup-type",
    ),
    pytest.param(
        lambda d: _template(d).update(topologyConstraint={"topologyName": "t", "pack": {"required": "rack"}}),
        f"{T}.topologyConstraint:",
        "cannot be added",
        id="topology-added",
    ),
    pytest.param(
        lambda d: _template(d)["podCliqueScalingGroups"].append({"name": "g2", "cliqueNames": ["worker"]}),
        f"{T}.podCliqueScalingGroups:",
        "added ['g2']",
        id="group-added",
    ),
]


@pytest.mark.parametrize(("mutate", "path", "rule"), REFUSED)
def test_forbidden_updates_name_the_field(mutate: Mutation, path: str, rule: str) -> None:
    errors = _errors(example("multinode-aggregated"), mutate)
    assert any(e.startswith(path) and rule in e for e in errors), errors


ALLOWED = [
    pytest.param(lambda d: d["spec"].update(replicas=3), id="pcs-replicas"),
    pytest.param(_set_group(replicas=5), id="group-replicas"),
    pytest.param(
        lambda d: _template(d)["cliques"][0]["spec"]["podSpec"]["containers"][0].update(image="nginx:2"), id="image"
    ),
]


@pytest.mark.parametrize("mutate", ALLOWED)
def test_scaling_and_pod_template_changes_are_allowed(mutate: Mutation) -> None:
    assert _errors(example("multinode-aggregated"), mutate) == []


def test_pack_domain_may_become_pack_required_and_gain_a_topology_name() -> None:
    before = example("multinode-aggregated")
    _template(before)["topologyConstraint"] = {"packDomain": "rack"}

    def modernise(d: dict[str, Any]) -> None:
        _template(d)["topologyConstraint"] = {"topologyName": "t", "pack": {"required": "rack"}}

    assert _errors(before, modernise) == []


def test_reorder_is_refused_only_under_ordered_startup() -> None:
    def swap(d: dict[str, Any]) -> None:
        cliques = _template(d)["cliques"]
        cliques[0], cliques[1] = cliques[1], cliques[0]

    assert _errors(example("multinode-aggregated"), swap) == []
    explicit = example("training-scaled")
    assert any(e.startswith(f"{T}.cliques:") and "reordered" in e for e in _errors(explicit, swap))


def test_refused_update_leaves_the_running_objects_alone() -> None:
    document = example("multinode-aggregated")
    api = cluster(document)
    reconciler(api).converge()
    before = pod_names(api)
    _set_group(minAvailable=2)(document)  # would move instance 1 into the base gang: Grove forbids it
    api.apply(document)
    outcome = reconciler(api).reconcile("default", "multinode-aggregated")
    assert not outcome.valid and pod_names(api) == before
    assert any("podCliqueScalingGroups[0].minAvailable" in e["message"] for e in api.events)
    _set_group(minAvailable=1)(document)  # back to the accepted shape, plus an allowed scale-up of the group
    api.apply(document)
    api.scale("PodCliqueScalingGroup", namespace="default", name="multinode-aggregated-0-model-instance", replicas=3)
    reconciler(api, seed=5).converge()
    assert before < pod_names(api) and len(pod_names(api)) == 12
