"""The PodCliqueSet's update record and its transitions: Grove's ``processGenerationHashChange`` and
``initUpdateProgress`` (operator/internal/controller/podcliqueset/reconcilespec.go; its test
``TestInitUpdateProgress``) and ``updatePCSWithNextSelectedReplica`` (components/podcliquesetreplica/
rollingupdate.go)."""

from __future__ import annotations

from typing import Any

from scheduler.reconcile.status.rollout import Rollout
from tests.reconcile.examples import example, pcs_model

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def _observe(status: dict[str, Any] | None, *, strategy: str = "RollingRecreate", generation: str = "new") -> Rollout:
    document = example("training-scaled")
    document["spec"]["updateStrategy"] = {"type": strategy}
    document["status"] = status
    return Rollout.observe(pcs_model(document), generation=generation, template_hashes={}, now=T1)


def test_a_generation_hash_seen_first_is_recorded_and_starts_no_update() -> None:
    rollout = _observe(None)
    assert rollout.status() == {"currentGenerationHash": "new"} and not rollout.rolling
    assert rollout.takes_template(0) and rollout.takes_template(5)


def test_a_changed_generation_hash_starts_an_update_with_no_replica_selected() -> None:
    rollout = _observe({"currentGenerationHash": "old", "updatedReplicas": 3})
    assert rollout.rolling and rollout.updating is None
    assert rollout.status() == {"currentGenerationHash": "new", "updateProgress": {"updateStartedAt": T1}}
    assert not rollout.takes_template(0)  # no PodClique takes the new template before its replica is selected
    rollout.select(1, T1)
    assert rollout.updating == 1 and rollout.takes_template(1) and not rollout.takes_template(0)
    assert rollout.status()["updateProgress"]["currentlyUpdating"] == [{"replicaIndex": 1, "updateStartedAt": T1}]
    rollout.complete(T1)
    assert not rollout.rolling and rollout.takes_template(0)
    assert rollout.status()["updateProgress"] == {"updateStartedAt": T1, "updateEndedAt": T1}


def test_an_update_under_way_carries_on_and_a_newer_template_restarts_it() -> None:
    under_way = {
        "currentGenerationHash": "new",
        "updateProgress": {"updateStartedAt": T0, "currentlyUpdating": [{"replicaIndex": 2, "updateStartedAt": T0}]},
    }
    assert _observe(under_way).updating == 2
    restarted = _observe(under_way, generation="newer")
    assert restarted.rolling and restarted.updating is None
    assert restarted.status()["updateProgress"] == {"updateStartedAt": T1}


def test_on_delete_starts_and_ends_an_update_at_once_with_no_replica_under_way() -> None:
    rollout = _observe({"currentGenerationHash": "old"}, strategy="OnDelete")
    assert not rollout.rolling and rollout.takes_template(0)
    assert rollout.status()["updateProgress"] == {"updateStartedAt": T1, "updateEndedAt": T1}
