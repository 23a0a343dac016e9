"""Properties of the desired-state function over random PodCliqueSet shapes, against counts computed directly."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.reconcile.desired.state import desired_state
from tests.reconcile.examples import pcs_model


@st.composite
def shapes(draw: st.DrawFn) -> dict[str, Any]:
    clique_count = draw(st.integers(1, 5))
    cliques = [
        {"name": f"c{i}", "spec": {"roleName": f"c{i}", "replicas": draw(st.integers(1, 4)), "podSpec": {}}}
        for i in range(clique_count)
    ]
    names = [c["name"] for c in cliques]
    groups = []
    free = list(names)
    for g in range(draw(st.integers(0, 2))):
        if not free:
            break
        members = draw(st.lists(st.sampled_from(free), min_size=1, max_size=len(free), unique=True))
        free = [n for n in free if n not in members]
        replicas = draw(st.integers(1, 4))
        groups.append(
            {
                "name": f"g{g}",
                "cliqueNames": members,
                "replicas": replicas,
                "minAvailable": draw(st.integers(1, replicas)),
            }
        )
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "replicas": draw(st.integers(0, 3)),
            "template": {"cliques": cliques, "podCliqueScalingGroups": groups},
        },
    }


@settings(max_examples=60, deadline=None)
@given(shapes())
def test_gangs_and_pods_match_the_counts_grove_implies(document: dict[str, Any]) -> None:
    desired = desired_state(pcs_model(document), None)
    spec = document["spec"]
    template = spec["template"]
    size = {c["name"]: c["spec"]["replicas"] for c in template["cliques"]}
    grouped = {n for g in template["podCliqueScalingGroups"] for n in g["cliqueNames"]}
    groups = template["podCliqueScalingGroups"]
    # One base gang per PCS replica plus one scaled gang per group replica at or above minAvailable.
    assert len(desired.gangs) == spec["replicas"] * (1 + sum(g["replicas"] - g["minAvailable"] for g in groups))
    per_replica_pods = sum(size[n] for n in size if n not in grouped) + sum(
        g["replicas"] * sum(size[n] for n in g["cliqueNames"]) for g in groups
    )
    assert sum(c.replicas for gang in desired.gangs for c in gang.cliques) == spec["replicas"] * per_replica_pods
    fqns = [c.fqn for gang in desired.gangs for c in gang.cliques]
    assert len(fqns) == len(set(fqns))  # every PodClique is in exactly one gang
    assert len({gang.name for gang in desired.gangs}) == len(desired.gangs)
    for gang in desired.gangs:
        base = f"p-{gang.pcs_replica}"
        assert gang.is_base == (gang.name == base)
        for clique in gang.cliques:
            assert clique.fqn.startswith(f"{base}-") and clique.gang == gang.name
            assert clique.base_gang == (None if gang.is_base else base)
            in_base_part = clique.group is None or clique.group.replica < (clique.group.config.minAvailable or 1)
            assert in_base_part == gang.is_base
