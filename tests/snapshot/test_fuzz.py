"""Whatever a snapshot holds, loading it either works or raises SnapshotError — never anything else — and what
loads can be inspected."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cli.snapshot_summary import summarise
from scheduler.snapshot import SnapshotError, parse_snapshot
from tests.builders import make_node, make_pod, make_podgang
from tests.corruption import JSON, corrupt

VALID = [
    make_node("n1").gpus(8).taint("k", "v").dict(),
    make_pod("p")
    .gpus(4)
    .cpu("1")
    .gang("g")
    .toleration("k", operator="Exists")
    .affinity_term([("a", "In", ["b"])])
    .dict(),
    make_pod("q").on("n1").init_container("i", requests={"cpu": "1"}).dict(),
    make_podgang("g").group("c", pods=["p"]).pack(required="kubernetes.io/hostname").dict(),
]


@settings(max_examples=150, deadline=None)
@given(which=st.integers(0, len(VALID) - 1), pick=st.integers(0, 10_000), replacement=JSON)
def test_any_single_corruption_is_a_snapshot_error_or_loads(which: int, pick: int, replacement: Any) -> None:
    items = copy.deepcopy(VALID)  # a load must not see what an earlier example did to the others
    items[which] = corrupt(VALID[which], pick=pick, replacement=replacement)
    try:
        snapshot = parse_snapshot({"kind": "List", "items": items})
    except SnapshotError:
        return
    summarise(snapshot)  # whatever loads must also summarise (snapshot inspect) without crashing
