"""Whatever a PodCliqueSet file holds, ``dry_run`` either returns the objects or raises ``DryRunRejected`` naming the
item and field — never anything else (issue 10: bad PCS files must not crash, hang or exhaust memory)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.reconcile.dryrun import DryRunRejected, dry_run
from tests.reconcile.examples import example

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
VALID = example("training-scaled")  # startup order, a scaling group, autoscaling-free: most fields in play
VALID["spec"]["template"]["cliques"][1]["spec"]["autoScalingConfig"] = {"minReplicas": 1, "maxReplicas": 2}
VALID["spec"]["template"]["podCliqueScalingGroups"][0]["scaleConfig"] = {"maxReplicas": 4}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


@settings(max_examples=200, deadline=None)
@given(pick=st.integers(0, 100_000), replacement=JSON)
def test_any_single_corruption_is_refused_with_a_reason_or_runs(pick: int, replacement: Any) -> None:
    document = copy.deepcopy(VALID)
    paths = _paths(document)
    path = paths[pick % len(paths)]
    if not path:
        document = replacement
    else:
        target = document
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = replacement
    try:
        result = dry_run([document] if isinstance(document, dict) else [{"kind": "List", "items": document}])
    except DryRunRejected as err:
        assert str(err) and "\n" not in str(err)  # one line, naming what is wrong
    else:
        assert result["kind"] == "List"
