"""The task contract through the agent: trusted changes, verification and STALE results."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessed import HarnessAgent
from harnessed.contract import TaskContractConfig, TaskRevisionConflictError
from harnessed.log import RecordType
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from tests.context.helpers import noop
from tests.support.fixtures import CTX

SHOW_ALL = TaskContractConfig(show_requirements=True, show_verification=True)


def task_state(request: ModelRequest) -> str:
    return next(m.text for m in request.messages if m.text.startswith("<TASK_STATE"))


def agent_for(model: ScriptedModel, **kw: Any) -> HarnessAgent:
    return HarnessAgent("fixer", model, tools=[noop], **kw)


async def test_a_result_for_version_1_shows_stale_after_the_subject_changes() -> None:
    model = ScriptedModel(["first look", "second look"])
    agent = agent_for(model, task_contract=SHOW_ALL)
    await agent.begin_task(CTX, "login", "Users can log in with SSO")
    await agent.add_requirement(CTX, "acceptance_criterion", "SSO login succeeds")
    result = await agent.verification.verify(
        CTX, "e2e", "passed", requirement_id="r1", details="3 scenarios"
    )
    assert result.subject_version == "1"
    await agent.call("status?", CTX)
    fresh = task_state(model.requests[0])
    assert "- e2e for r1: passed (subject version 1) — 3 scenarios" in fresh
    assert "STALE" not in fresh and "task verified: yes, for subject version 1." in fresh

    await agent.set_task_subject(CTX, 2)
    await agent.call("and now?", CTX)
    stale = task_state(model.requests[1])
    assert "verification (current subject version: 2):" in stale
    assert "- e2e for r1: passed (subject version 1) STALE" in stale
    assert "task verified: no" in stale and "no current passing check for r1" in stale


async def test_the_contract_is_opt_in_in_task_state() -> None:
    model = ScriptedModel(["a"])
    agent = agent_for(model)
    await agent.begin_task(CTX, "login", "Fix the login")
    await agent.add_requirement(CTX, "constraint", "KEEP-THE-API")
    await agent.verification.verify(CTX, "unit", "failed")
    await agent.call("hi", CTX)
    state = task_state(model.requests[0])
    assert "objective: Fix the login" in state and "task: login" in state
    assert "KEEP-THE-API" not in state and "unit" not in state


async def test_completed_todos_never_mean_verified() -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall(
                        "todo_write", {"todos": [{"content": "fix", "status": "completed"}]}
                    )
                ]
            ),
            "all done",
        ]
    )
    agent = agent_for(model, task_contract=SHOW_ALL, enable_task_list=True)
    await agent.begin_task(CTX, "t", "fix it")
    await agent.call("go", CTX)
    state = task_state(model.requests[1])
    assert "- [completed] fix" in state
    assert "task verified: no — no check has been recorded for subject version 1." in state
    assert "Completed todos do not make the task verified" in state


async def test_model_proposals_stay_candidates_until_confirmed() -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall(
                        "task_requirement_propose",
                        {"kind": "acceptance_criterion", "text": "login takes < 2 s"},
                        id="p1",
                    )
                ]
            ),
            "proposed",
            "thanks",
        ]
    )
    config = TaskContractConfig(show_requirements=True, allow_requirement_proposals=True)
    agent = agent_for(model, task_contract=config)
    await agent.begin_task(CTX, "t", "fast login")
    await agent.call("go", CTX)
    assert "[candidate: proposed, not confirmed]: login takes &lt; 2 s" in task_state(
        model.requests[1]
    )
    task = await agent.task_state(CTX)
    assert task is not None and task.requirements[0].source == "model"
    await agent.confirm_requirement(CTX, "r1", expected_revision=task.revision)
    await agent.call("next", CTX)
    assert "r1 acceptance criterion [confirmed]: login takes &lt; 2 s" in task_state(
        model.requests[2]
    )
    changes = await agent.session_log(CTX, types=[RecordType.TASK_CHANGED])
    assert [(r.payload["action"], r.payload["by"]) for r in changes] == [
        ("begin", "application"),
        ("propose", "agent"),
        ("confirm", "application"),
    ]


async def test_allowing_proposals_shows_the_model_its_candidates_and_the_outcome() -> None:
    propose = ScriptedResponse(
        tool_calls=[
            ScriptedToolCall(
                "task_requirement_propose", {"kind": "constraint", "text": "keep v1 API"}, id="p"
            )
        ]
    )
    model = ScriptedModel([propose, "proposed", "noted"])
    config = TaskContractConfig(allow_requirement_proposals=True)  # showing is not asked for
    assert config.show_requirements is True
    agent = agent_for(model, task_contract=config)
    await agent.begin_task(CTX, "t", "ship the release")
    await agent.call("go", CTX)
    assert "r1 constraint [candidate: proposed, not confirmed]: keep v1 API" in task_state(
        model.requests[1]
    )
    await agent.reject_requirement(CTX, "r1", note="v1 is being retired")
    await agent.call("next", CTX)
    assert "r1 constraint [rejected: v1 is being retired]: keep v1 API" in task_state(
        model.requests[2]
    )


def test_proposing_without_showing_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="show_requirements=False cannot be combined"):
        TaskContractConfig(show_requirements=False, allow_requirement_proposals=True)
    assert TaskContractConfig().show_requirements is False
    assert TaskContractConfig(show_requirements=True).show_requirements is True
    with pytest.raises(ValueError, match="show_requirements must be a bool"):
        TaskContractConfig(show_requirements="yes")  # type: ignore[arg-type]


async def test_proposals_need_permission_and_a_task() -> None:
    model = ScriptedModel(["a", "b"])
    await agent_for(model).call("x", CTX)
    assert "task_requirement_propose" not in [t.name for t in model.requests[0].tools]
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall(
                        "task_requirement_propose", {"kind": "constraint", "text": "x"}, id="p"
                    )
                ]
            ),
            "ok",
        ]
    )
    agent = agent_for(model, task_contract=TaskContractConfig(allow_requirement_proposals=True))
    await agent.call("x", CTX)
    refused = next(r for m in model.requests[1].messages for r in m.tool_results)
    assert refused.is_error and "no task contract" in refused.content


async def test_a_stale_expected_revision_changes_nothing() -> None:
    agent = agent_for(ScriptedModel())
    task = await agent.begin_task(CTX, "t", "goal")
    await agent.add_requirement(CTX, "constraint", "c1")
    with pytest.raises(TaskRevisionConflictError):
        await agent.add_requirement(CTX, "constraint", "c2", expected_revision=task.revision)
    with pytest.raises(TaskRevisionConflictError):
        await agent.verification.verify(CTX, "lint", "passed", expected_revision=task.revision)
    current = await agent.task_state(CTX)
    assert current is not None and current.revision == 2
    assert [r.text for r in current.requirements] == ["c1"] and current.verifications == ()


async def test_verification_run_records_outcomes_and_binds_the_starting_version() -> None:
    agent = agent_for(ScriptedModel())
    await agent.begin_task(CTX, "t", "goal")

    async def slow_check() -> tuple[str, str]:
        await asyncio.sleep(0.02)
        return "passed", "41 passed"

    def broken_check() -> bool:
        raise RuntimeError("runner crashed")

    checking = asyncio.create_task(agent.verification.run(CTX, "pytest", slow_check))
    await asyncio.sleep(0.005)
    await agent.set_task_subject(CTX, "v2")  # the subject changed while the check ran
    passed = await checking
    assert (passed.outcome, passed.subject_version, passed.details) == ("passed", "1", "41 passed")
    task = await agent.task_state(CTX)
    assert task is not None and task.is_stale(task.verifications[-1])

    errored = await agent.verification.run(CTX, "pytest", broken_check)
    assert errored.outcome == "error" and "runner crashed" in errored.details
    failed = await agent.verification.run(CTX, "lint", lambda: False)
    assert failed.outcome == "failed" and failed.subject_version == "v2"
    odd = await agent.verification.run(CTX, "lint", lambda: "maybe")
    assert odd.outcome == "error" and "must return" in odd.details


async def test_the_task_contract_needs_a_task_and_survives_restarts(tmp_path: Any) -> None:
    agent = HarnessAgent("fixer", ScriptedModel(), workspace=tmp_path)
    with pytest.raises(LookupError, match="begin_task"):
        await agent.verification.verify(CTX, "x", "passed")
    with pytest.raises(LookupError):
        await agent.confirm_requirement(CTX, "r1")
    await agent.begin_task(CTX, "t", "goal", metadata={"ticket": "OPS-1"})
    await agent.verification.verify(CTX, "x", "unknown")
    again = HarnessAgent("fixer", ScriptedModel(), workspace=tmp_path)
    task = await again.task_state(CTX)
    assert task is not None and task.metadata == {"ticket": "OPS-1"}
    assert task.verifications[0].outcome == "unknown"
    await again.end_task(CTX)
    assert await again.task_state(CTX) is None


async def test_changes_wait_for_a_running_call_of_the_session() -> None:
    gate = asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        await gate.wait()
        return "done"

    agent = agent_for(ScriptedModel(responder=slow))
    await agent.begin_task(CTX, "t", "goal")
    running = asyncio.create_task(agent.call("work", CTX))
    await asyncio.sleep(0.01)
    changing = asyncio.create_task(agent.set_task_subject(CTX, 2))
    await asyncio.sleep(0.01)
    assert not changing.done()  # waits for the call to end
    gate.set()
    await asyncio.wait_for(asyncio.gather(running, changing), 5)
    task = await agent.task_state(CTX)
    assert task is not None and task.subject_version == "2"
