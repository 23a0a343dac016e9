"""Whatever a PodCliqueSet file holds, ``dry_run`` either returns the objects or raises ``DryRunRejected`` naming the
item and field — never anything else (issue 10: bad PCS files must not crash, hang or exhaust memory)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.reconcile.dryrun import DryRunRejected, dry_run
from tests.corruption import JSON, corrupt
from tests.reconcile.examples import example

VALID = example("training-scaled")  # startup order, a scaling group, autoscaling-free: most fields in play
VALID["spec"]["template"]["cliques"][1]["spec"]["autoScalingConfig"] = {"minReplicas": 1, "maxReplicas": 2}
VALID["spec"]["template"]["podCliqueScalingGroups"][0]["scaleConfig"] = {"maxReplicas": 4}


@settings(max_examples=200, deadline=None)
@given(pick=st.integers(0, 100_000), replacement=JSON)
def test_any_single_corruption_is_refused_with_a_reason_or_runs(pick: int, replacement: Any) -> None:
    document = corrupt(VALID, pick=pick, replacement=replacement)
    try:
        result = dry_run([document] if isinstance(document, dict) else [{"kind": "List", "items": document}])
    except DryRunRejected as err:
        assert str(err) and "\n" not in str(err)  # one line, naming what is wrong
    else:
        assert result["kind"] == "List"
