"""The update fields of PodClique, scaling-group and PodCliqueSet status, each case named after the Grove test it
mirrors (Grove snapshot fcc3b3bb): operator/internal/controller/podclique/reconcilestatus_test.go,
podcliquescalinggroup/reconcilestatus_test.go and podcliqueset/reconcilestatus_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.reconcile.status.cliques import BREACHED, pcsg_status, podclique_status
from scheduler.reconcile.status.updates import UpdateTarget, pcs_update, podclique_update

NOW = "2026-01-01T00:00:00Z"
GEN = "gen-current"


def _target(*, eligible: bool = True, rolling: bool = True, on_delete: bool = False) -> UpdateTarget:
    return UpdateTarget(generation=GEN, eligible=eligible, rolling=rolling, on_delete=on_delete, now=NOW)


def _pod(name: str, template: str, *, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"grove.io/pod-template-hash": template}},
        "spec": {"nodeName": "n"},
        "status": {"conditions": [{"type": "Ready", "status": str(ready)}]},
    }


def _podclique(label: str, status: dict[str, Any] | None = None, *, minimum: int = 1, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "pcs-0-worker", "labels": {"grove.io/pod-template-hash": label, **labels}},
        "spec": {"replicas": 2, "minAvailable": minimum, "podSpec": {}},
        "status": status or {},
    }


# --- podclique/reconcilestatus_test.go: TestMutateUpdatedReplica ----------------------------------------------------


@pytest.mark.parametrize(
    ("status", "pods", "updated"),
    [
        pytest.param(
            {"updateProgress": {"podTemplateHash": "new", "podCliqueSetGenerationHash": GEN, "updateStartedAt": NOW}},
            [_pod(f"p{i}", "new") for i in range(3)] + [_pod(f"q{i}", "old") for i in range(7)],
            3,
            id="rolling update in progress - count pods with new hash",
        ),
        pytest.param(
            {"updateProgress": {"podTemplateHash": "new", "podCliqueSetGenerationHash": GEN, "updateEndedAt": NOW}},
            [_pod(f"p{i}", "new") for i in range(10)],
            10,
            id="update just completed - use UpdateProgress hash",
        ),
        pytest.param({}, [_pod(f"p{i}", "old") for i in range(5)], 5, id="steady state - no rolling update"),
    ],
)
def test_updated_replicas_count_the_pods_on_the_hash_the_podclique_converges_to(
    status: dict[str, Any], pods: list[dict[str, Any]], updated: int
) -> None:
    fields = podclique_update(_podclique("old", status), pods, target=_target(eligible=False), template_hash="new")
    assert fields["updatedReplicas"] == updated


# --- podclique/reconcilestatus_test.go: TestReconcileStatusConvergesWhenReadyPodMatchesDesiredHash, ---------------
# --- TestMutateCurrentHashesDoesNotAdvanceWhenTemplateHashIsStale ---------------------------------------------------


def test_current_hashes_converge_once_every_pod_matches_the_desired_hash() -> None:
    stale = {"currentPodTemplateHash": "stale-template-hash", "currentPodCliqueSetGenerationHash": "old-generation"}
    podclique = _podclique("desired", stale)
    fields = podclique_update(podclique, [_pod("p", "desired")], target=_target(), template_hash="desired")
    assert fields["updatedReplicas"] == 1
    assert (fields["currentPodTemplateHash"], fields["currentPodCliqueSetGenerationHash"]) == ("desired", GEN)


def test_current_hashes_do_not_advance_while_the_podclique_carries_a_stale_template() -> None:
    status = {"currentPodTemplateHash": "", "currentPodCliqueSetGenerationHash": "old-generation"}
    fields = podclique_update(
        _podclique("stale", status), [_pod("p", "stale")] * 2, target=_target(eligible=False), template_hash="desired"
    )
    assert "currentPodTemplateHash" not in fields and "currentPodCliqueSetGenerationHash" not in fields


# --- podclique/reconcilespec.go: shouldResetOrTriggerUpdate, initOrResetUpdate; reconcilestatus.go ------------------


def test_a_podclique_of_an_older_generation_starts_its_update_on_its_turn_and_ends_it_when_ready_again() -> None:
    older = {"currentPodTemplateHash": "old", "currentPodCliqueSetGenerationHash": "gen-old", "readyReplicas": 2}
    podclique = _podclique("new", older, minimum=2)
    waiting = podclique_update(podclique, [_pod("a", "old"), _pod("b", "old")], target=_target(eligible=False),
                               template_hash="new")  # fmt: skip
    assert "updateProgress" not in waiting  # not its replica's turn
    started = podclique_update(podclique, [_pod("a", "old"), _pod("b", "old")], target=_target(), template_hash="new")
    assert started["updateProgress"] == {"updateStartedAt": NOW, "podCliqueSetGenerationHash": GEN,
                                         "podTemplateHash": "new"}  # fmt: skip
    assert started["updatedReplicas"] == 0 and "currentPodTemplateHash" not in started
    status = podclique_status(podclique | {"status": started}, [_pod("a", "old")], target=_target(),
                              template_hash="new")  # fmt: skip
    (breach,) = [c for c in status["conditions"] if c["type"] == BREACHED]
    assert (breach["status"], breach["reason"]) == ("Unknown", "UpdateInProgress")  # gang termination stays off
    coming = podclique_update(podclique | {"status": started}, [_pod("a", "new", ready=False), _pod("b", "new")],
                              target=_target(), template_hash="new")  # fmt: skip
    assert "updateEndedAt" not in coming["updateProgress"]  # one of minAvailable 2 is Ready
    done = podclique_update(podclique | {"status": started}, [_pod("a", "new"), _pod("b", "new")], target=_target(),
                            template_hash="new")  # fmt: skip
    assert done["updateProgress"]["updateEndedAt"] == NOW
    assert (done["currentPodTemplateHash"], done["currentPodCliqueSetGenerationHash"]) == ("new", GEN)


def test_on_delete_starts_and_ends_a_podcliques_update_at_once() -> None:
    older = {"currentPodTemplateHash": "old", "currentPodCliqueSetGenerationHash": "gen-old"}
    fields = podclique_update(_podclique("new", older), [_pod("a", "old"), _pod("b", "new")],
                              target=_target(rolling=False, on_delete=True), template_hash="new")  # fmt: skip
    assert fields["updateProgress"]["updateStartedAt"] == fields["updateProgress"]["updateEndedAt"] == NOW
    assert fields["updatedReplicas"] == 1 and "currentPodTemplateHash" not in fields  # one pod still old


def test_a_podclique_made_for_the_current_generation_needs_no_update() -> None:
    fields = podclique_update(_podclique("new"), [_pod("a", "new")], target=_target(), template_hash="new")
    assert "updateProgress" not in fields and fields["currentPodCliqueSetGenerationHash"] == GEN


# --- podcliquescalinggroup/reconcilestatus_test.go ------------------------------------------------------------------


def _member(index: int, clique: str, *, label: str, current: str | None, gen: str | None, ready: int) -> dict[str, Any]:
    status: dict[str, Any] = {"readyReplicas": ready, "updatedReplicas": ready,
                              "conditions": [{"type": "PodCliqueScheduled", "status": "True"}]}  # fmt: skip
    if current is not None:
        status["currentPodTemplateHash"] = current
    if gen is not None:
        status["currentPodCliqueSetGenerationHash"] = gen
    return {
        "metadata": {
            "name": f"pcs-0-sg-{index}-{clique}",
            "labels": {"grove.io/pod-template-hash": label, "grove.io/podcliquescalinggroup-replica-index": str(index)},
        },
        "spec": {"replicas": 1, "minAvailable": 1},
        "status": status,
    }


def _pcsg(status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "pcs-0-sg", "labels": {"app.kubernetes.io/part-of": "pcs"}},
        "spec": {"replicas": 2, "minAvailable": 1, "cliqueNames": ["a", "b"]},
        "status": status or {},
    }


def test_pcsg_writes_update_progress_counts_and_its_breach_reads_unknown_while_updating() -> None:
    # TestPCSGMutateReplicasWritesUpdateProgressCounts, TestComputeMinAvailableBreachedConditionUpdateInProgress
    members = [
        _member(0, "a", label="ha", current="ha", gen=GEN, ready=1),
        _member(0, "b", label="hb", current="hb", gen=GEN, ready=1),
        _member(1, "a", label="old", current="old", gen="gen-old", ready=1),
        _member(1, "b", label="hb", current="hb", gen="gen-old", ready=1),
    ]
    status = pcsg_status(_pcsg(), members, target=_target(), template_hashes={"a": "ha", "b": "hb"})
    assert status["updateProgress"] == {"updateStartedAt": NOW, "podCliqueSetGenerationHash": GEN,
                                        "updatedPodCliquesCount": 2, "totalPodCliquesCount": 4}  # fmt: skip
    assert status["updatedReplicas"] == 1 and "currentPodCliqueSetGenerationHash" not in status
    (breach,) = status["conditions"]
    assert (breach["type"], breach["status"], breach["reason"]) == (BREACHED, "Unknown", "UpdateInProgress")


def test_pcsg_converges_to_the_generation_once_every_podclique_has() -> None:
    # TestHavePCSGPodCliquesConverged: every expected PodClique on the expected hashes and generation.
    members = [_member(i, c, label=f"h{c}", current=f"h{c}", gen=GEN, ready=1) for i in (0, 1) for c in "ab"]
    started = {"updateProgress": {"updateStartedAt": NOW, "podCliqueSetGenerationHash": GEN}}
    status = pcsg_status(_pcsg(started), members, target=_target(), template_hashes={"a": "ha", "b": "hb"})
    assert status["updateProgress"]["updateEndedAt"] == NOW and status["currentPodCliqueSetGenerationHash"] == GEN
    assert status["updatedReplicas"] == 2 and status["conditions"][0]["status"] == "False"
    missing = pcsg_status(_pcsg(), members[:3], target=_target(eligible=False), template_hashes={"a": "ha", "b": "hb"})
    assert "currentPodCliqueSetGenerationHash" not in missing


def test_pcsg_under_on_delete_starts_and_ends_its_update_at_once_and_counts_what_was_recreated() -> None:
    # podcliquescalinggroup/reconcilespec.go processUpdate: OnDelete records the generation with both stamps set.
    members = [
        _member(0, "a", label="ha", current="ha", gen=GEN, ready=1),
        _member(0, "b", label="hb", current="hb", gen=GEN, ready=1),
        _member(1, "a", label="ha", current="old", gen="gen-old", ready=1),  # its pods not deleted yet
        _member(1, "b", label="hb", current="hb", gen=GEN, ready=1),
    ]
    target = _target(rolling=False, on_delete=True)
    status = pcsg_status(_pcsg(), members, target=target, template_hashes={"a": "ha", "b": "hb"})
    progress = status["updateProgress"]
    assert progress["updateStartedAt"] == progress["updateEndedAt"] == NOW
    assert (progress["updatedPodCliquesCount"], progress["totalPodCliquesCount"], status["updatedReplicas"]) == (
        3,
        4,
        1,
    )
    assert "currentPodCliqueSetGenerationHash" not in status  # one PodClique has not converged
    assert status["conditions"][0]["reason"] != "UpdateInProgress"  # nothing is under way: gang termination holds


# --- podcliqueset/reconcilestatus_test.go: TestComputePCSUpdateProgressCounts, TestCountUpdatedPCLQs ----------------


def _standalone(name: str, *, label: str = "h", gen: str | None = GEN, terminating: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"grove.io/pod-template-hash": label}}
    if terminating:
        meta["deletionTimestamp"] = NOW
    status = {"readyReplicas": 1, "updatedReplicas": 1, "currentPodTemplateHash": label}
    if gen is not None:
        status["currentPodCliqueSetGenerationHash"] = gen
    return {"metadata": meta, "spec": {"minAvailable": 1}, "status": status}


def _group(name: str, gen: str | None) -> dict[str, Any]:
    status: dict[str, Any] = {"availableReplicas": 1}
    if gen is not None:
        status["currentPodCliqueSetGenerationHash"] = gen
    return {"metadata": {"name": name}, "spec": {"minAvailable": 1}, "status": status}


@pytest.mark.parametrize(
    ("cliques", "groups", "expected"),
    [
        pytest.param([_standalone("c0"), _standalone("c1")], [_group("g0", GEN), _group("g1", GEN)], (2, 2, 2),
                     id="all standalone PCLQs and PCSGs at current hash"),
        pytest.param([_standalone("c0"), _standalone("c1", gen="gen-old")], [_group("g0", GEN), _group("g1", None)],
                     (1, 1, 1), id="one PCLQ at old hash, one PCSG missing hash"),
        pytest.param([_standalone("c0"), _standalone("c1", terminating=True)], [_group("g0", GEN), _group("g1", GEN)],
                     (1, 1, 2), id="terminating standalone PCLQ excluded from updated count"),
        pytest.param([_standalone("c0", gen=None), _standalone("c1")], [_group("g0", GEN), _group("g1", GEN)],
                     (1, 1, 2), id="PCLQ with no generation hash is not counted as updated"),
    ],
)  # fmt: skip
def test_pcs_counts_updated_podcliques_and_groups_and_the_replicas_wholly_updated(
    cliques: list[dict[str, Any]], groups: list[dict[str, Any]], expected: tuple[int, int, int]
) -> None:
    updated, counts = pcs_update(
        generation=GEN,
        template_hashes={"c0": "h", "c1": "h"},
        standalone={0: ["c0"], 1: ["c1"]},
        groups={0: ["g0"], 1: ["g1"]},
        podcliques={c["metadata"]["name"]: c for c in cliques},
        scaling_groups={g["metadata"]["name"]: g for g in groups},
    )
    assert counts["totalPodCliquesCount"] == counts["totalPodCliqueScalingGroupsCount"] == 2
    # (updatedReplicas: replicas available with all of theirs updated; updated PodCliques; updated groups)
    assert (updated, counts["updatedPodCliquesCount"], counts["updatedPodCliqueScalingGroupsCount"]) == expected
