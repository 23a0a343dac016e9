"""The status merge patch: what the reconciler no longer wants of a field it owns goes as ``null`` (RFC 7386), so
a finished update's ``currentlyUpdating`` or a restarted update's ``updateEndedAt`` leave the stored status."""

from __future__ import annotations

from scheduler.reconcile.status.patch import status_patch

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def test_a_status_that_already_holds_every_wanted_value_needs_no_patch() -> None:
    stored = {"updatedReplicas": 2, "updateProgress": {"updateStartedAt": T0}, "availableReplicas": 2}
    assert status_patch(stored, {"updatedReplicas": 2, "updateProgress": {"updateStartedAt": T0}}) is None


def test_a_finished_updates_replica_under_way_is_removed_with_null() -> None:
    stored = {"updateProgress": {"updateStartedAt": T0, "currentlyUpdating": [{"replicaIndex": 1}]}}
    wanted = {"updateProgress": {"updateStartedAt": T0, "updateEndedAt": T1}}
    assert status_patch(stored, wanted) == {
        "updateProgress": {"updateStartedAt": T0, "updateEndedAt": T1, "currentlyUpdating": None}
    }


def test_a_restarted_update_drops_the_end_of_the_one_before() -> None:
    stored = {"updateProgress": {"updateStartedAt": T0, "updateEndedAt": T0, "updatedPodCliquesCount": 4}}
    wanted = {"updateProgress": {"updateStartedAt": T1, "updatedPodCliquesCount": 0}}
    patch = status_patch(stored, wanted)
    assert patch == {"updateProgress": {"updateStartedAt": T1, "updatedPodCliquesCount": 0, "updateEndedAt": None}}


def test_fields_the_reconciler_does_not_name_are_left_to_whoever_owns_them() -> None:
    stored = {"updatedReplicas": 1, "observedGeneration": 3, "conditions": [{"type": "Other"}]}
    assert status_patch(stored, {"updatedReplicas": 2}) == {"updatedReplicas": 2}


def test_a_wanted_none_removes_a_key_and_a_value_that_was_not_an_object_is_replaced_whole() -> None:
    stored = {"updateProgress": {"updateStartedAt": T0}, "selector": "a=b"}
    assert status_patch(stored, {"updateProgress": None, "selector": {"app": "x"}}) == {
        "updateProgress": None,
        "selector": {"app": "x"},
    }
