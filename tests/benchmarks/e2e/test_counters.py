"""bench_e2e --real's counters: read from Prometheus text, per bound pod between two readings, named briefly."""

from __future__ import annotations

from benchmarks.e2e.counters import by_label, counters, per_pod, short

BEFORE = """# HELP grove_extender_binds_total binds
# TYPE grove_extender_binds_total counter
grove_extender_binds_total{result="bound"} 10.0
grove_extender_request_seconds_count{verb="filter"} 40.0
grove_extender_request_seconds_sum{verb="filter"} 1.5
grove_extender_gangs{state="Bound"} 3.0
apiserver_request_total{code="201",resource="pods",subresource="binding",system_client="",verb="POST"} 7
"""
AFTER = BEFORE.replace("} 10.0", "} 810.0").replace("} 40.0", "} 1640.0").replace("} 7", "} 807")


def test_counters_per_bound_pod_leave_gauges_and_sums_out() -> None:
    ours = lambda name: name.startswith("grove_extender_")  # noqa: E731
    moved = per_pod(counters(BEFORE, keep=ours), counters(AFTER, keep=ours), 800)
    # (810 − 10) / 800 binds and (1640 − 40) / 800 filters per pod; the gauge and the histogram's sum are no counters.
    assert moved == {
        'grove_extender_request_seconds_count{verb="filter"}': 2.0,
        'grove_extender_binds_total{result="bound"}': 1.0,
    }


def test_sums_are_read_when_asked_for() -> None:
    found = counters(AFTER, keep=lambda name: name.startswith("grove_extender_"), sums=True)
    assert found['grove_extender_request_seconds_sum{verb="filter"}'] == 1.5


def test_series_are_named_as_a_reader_wants_them() -> None:
    (series,) = counters(AFTER, keep=lambda name: name.startswith("apiserver_"))
    assert short(series) == "POST pods/binding 201 (others)"
    assert short('grove_extender_binds_total{result="bound"}') == 'binds_total{result="bound"}'


def test_a_gauge_is_read_by_one_label() -> None:
    text = BEFORE + 'grove_extender_gangs{state="Planned"} 372.0\ngrove_extender_gangs_total{state="Planned"} 9\n'
    assert by_label(text, "grove_extender_gangs", "state") == {"Bound": 3.0, "Planned": 372.0}
    assert by_label(text, "grove_extender_gangs", "verb") == {}
