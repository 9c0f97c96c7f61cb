"""The task contract as a value: revisions, trust, verification and staleness (BEHAVIOUR §6)."""

from __future__ import annotations

import json

import pytest

from harnessed.contract import TaskContextState, TaskRevisionConflictError


def task() -> TaskContextState:
    return TaskContextState.begin("login", "Users can log in with SSO")


def test_begin_validates_and_starts_at_revision_one() -> None:
    t = task()
    assert (t.task_id, t.revision, t.subject_version) == ("login", 1, "1")
    with pytest.raises(ValueError, match="task_id"):
        TaskContextState.begin(" ", "x")
    with pytest.raises(ValueError, match="objective"):
        TaskContextState.begin("t", "")
    with pytest.raises(ValueError, match="subject_version"):
        TaskContextState.begin("t", "x", subject_version="")
    replaced = TaskContextState.begin("other", "y", previous=t.add_requirement("constraint", "c"))
    assert replaced.revision == 3 and replaced.requirements == ()


def test_every_change_bumps_the_revision_and_leaves_the_original_alone() -> None:
    t0 = task()
    t1 = t0.add_requirement("constraint", "keep the public API", source="model")
    t2 = t1.confirm("r1")
    t3 = t2.with_subject_version("abc123")
    t4 = t3.record("pytest", "passed")
    assert [t.revision for t in (t0, t1, t2, t3, t4)] == [1, 2, 3, 4, 5]
    assert t0.requirements == () and t1.requirements[0].status == "candidate"
    assert t2.requirements[0].status == "confirmed"


def test_a_stale_expected_revision_is_rejected() -> None:
    t = task().add_requirement("constraint", "no new dependencies")
    with pytest.raises(TaskRevisionConflictError, match="revision 2, not the expected revision 1"):
        t.confirm("r1", expected_revision=1)
    assert t.reject("r1", expected_revision=2, note="too strict").revision == 3


def test_model_proposals_are_candidates_and_application_requirements_confirmed() -> None:
    t = task().add_requirement("acceptance_criterion", "SSO login works", source="model")
    t = t.add_requirement("constraint", "no password storage")
    assert [(r.id, r.status, r.source) for r in t.requirements] == [
        ("r1", "candidate", "model"),
        ("r2", "confirmed", "application"),
    ]
    with pytest.raises(ValueError, match="r1 already says this"):
        t.add_requirement("acceptance_criterion", "  sso LOGIN works ", source="model")
    rejected = t.reject("r1", note="out of scope")
    assert rejected.requirement("r1").note == "out of scope"
    # a rejected requirement no longer blocks the same text from being proposed again
    again = rejected.add_requirement("acceptance_criterion", "SSO login works", source="model")
    assert again.requirements[-1].id == "r3"


def test_decisions_name_their_problem() -> None:
    t = task().add_requirement("constraint", "x")
    with pytest.raises(KeyError, match=r"no requirement 'r9'.*r1"):
        t.confirm("r9")
    with pytest.raises(ValueError, match="already confirmed"):
        t.confirm("r1")
    with pytest.raises(ValueError, match="requirement kind"):
        t.add_requirement("wish", "y")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="already at version"):
        t.with_subject_version("1")


def test_results_are_bound_to_the_subject_version_and_go_stale() -> None:
    t = task().add_requirement("acceptance_criterion", "login works")
    t = t.record("e2e", "passed", requirement_id="r1", details="3 scenarios")
    result = t.verifications[-1]
    assert result.subject_version == "1" and not t.is_stale(result)
    assert t.unverified() == []
    t = t.with_subject_version(2)
    assert t.is_stale(t.verifications[-1])
    assert any("no check has been recorded for subject version 2" in r for r in t.unverified())
    assert any("r1" in r for r in t.unverified())


def test_verified_needs_current_passing_checks_for_every_confirmed_criterion() -> None:
    t = (
        task()
        .add_requirement("acceptance_criterion", "a")
        .add_requirement("acceptance_criterion", "b")
    )
    t = t.record("unit", "passed", requirement_id="r1")
    assert t.unverified() == ["no current passing check for r2"]
    t = t.record("unit", "failed", requirement_id="r2")
    assert "not passing: unit failed" in t.unverified()
    t = t.record("unit", "passed", requirement_id="r2")
    assert t.unverified() == []
    assert [r.outcome for r in t.latest_results()] == ["passed", "passed"]


def test_record_validates_outcome_and_requirement() -> None:
    t = task().add_requirement("constraint", "x").reject("r1")
    with pytest.raises(ValueError, match="verification outcome"):
        t.record("lint", "ok")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="was rejected"):
        t.record("lint", "passed", requirement_id="r1")
    with pytest.raises(KeyError):
        t.record("lint", "passed", requirement_id="r7")
    older = t.record("lint", "passed", subject_version="0")
    assert older.is_stale(older.verifications[-1])


def test_json_round_trip() -> None:
    t = (
        task()
        .add_requirement("constraint", "c", source="model")
        .reject("r1", note="no")
        .record("lint", "error", details="crashed")
    )
    again = TaskContextState.from_dict(json.loads(json.dumps(t.to_dict())))
    assert again == t
    with pytest.raises(ValueError, match="missing field 'objective'"):
        TaskContextState.from_dict({"task_id": "t"})
