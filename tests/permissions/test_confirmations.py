"""Asking the user: confirmation events, answers, parked steps and resuming (BEHAVIOUR §6)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.context import tool_pair_problems
from harnessed.events import (
    AgentEndEvent,
    ConfirmationRequestEvent,
    Event,
    ToolResultEvent,
)
from harnessed.log import RecordType
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse
from harnessed.permissions import ConfirmationError, PermissionRule
from harnessed.state.parked import PARKED
from tests.permissions.deployer import Deployer
from tests.support.fixtures import CTX, call


def result(request: ModelRequest, call_id: str) -> Any:
    for m in request.messages:
        for r in m.tool_results:
            if r.tool_use_id == call_id:
                return r
    raise AssertionError(f"no result for {call_id}")


def agent_for(model: ScriptedModel, d: Deployer, **kw: Any) -> HarnessAgent:
    kw.setdefault("permission_mode", "default")
    return HarnessAgent("ops", model, tools=d.tools, **kw)


async def test_stream_asks_and_the_run_continues_after_the_answer() -> None:
    d = Deployer()
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("deploy", "c1", target="prod")]), "shipped"]
    )
    agent = agent_for(model, d)
    events: list[Event] = []
    async for event in agent.stream_events("ship it", CTX):
        events.append(event)
        if isinstance(event, ConfirmationRequestEvent):
            assert d.deployed == []  # nothing runs before the answer
            assert [p.request_id for p in await agent.pending_confirmations(CTX)] == [
                event.request_id
            ]
            await agent.respond(CTX, event.request_id, True)  # answered in the same task
    kinds = [e.type for e in events]
    assert kinds.index("confirmation_request") < kinds.index("tool_result")
    ask = next(e for e in events if isinstance(e, ConfirmationRequestEvent))
    assert ask.call.name == "deploy" and ask.call.input == {"target": "prod"}
    assert "needs your approval" in ask.reason
    assert d.deployed == ["prod"]
    assert isinstance(events[-1], AgentEndEvent) and events[-1].status == "completed"
    actions = [
        r.payload["action"]
        for r in await agent.session_log(CTX, types=[RecordType.PERMISSION_CHANGED])
    ]
    assert actions == ["requested", "answered"]


async def test_a_declined_call_does_not_run_and_the_model_is_told() -> None:
    d = Deployer()
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("deploy", "c1", target="prod")]), "ok, not deploying"]
    )
    agent = agent_for(model, d)

    async def answer_later(request_id: str) -> None:
        await asyncio.sleep(0.01)
        await agent.respond(CTX, request_id, False, feedback="not on a Friday")

    tasks = []
    async for event in agent.stream_events("ship it", CTX):
        if isinstance(event, ConfirmationRequestEvent):
            tasks.append(asyncio.create_task(answer_later(event.request_id)))
        if isinstance(event, ToolResultEvent):
            assert event.result.is_error
    await asyncio.gather(*tasks)
    declined = result(model.requests[1], "c1")
    assert declined.is_error and "declined" in declined.content
    assert "not on a Friday" in declined.content
    assert d.deployed == []


async def test_call_ends_pending_without_saving_half_a_step_and_resumes() -> None:
    d = Deployer()
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[call("status", "s1"), call("deploy", "c1", target="prod")]
            ),
            "deployed",
        ]
    )
    agent = agent_for(model, d)
    events = [e async for e in agent.stream_events("ship", CTX, confirmations="park")]
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.status == "pending"
    assert end.reply.metadata["harness"] == "pending_confirmation"
    assert d.deployed == [] and d.reads == 0  # no call of the step ran
    state = await agent.load_state(CTX)
    assert [m.role for m in state.history] == ["user"]  # the calls are not in the history
    [request] = await agent.pending_confirmations(CTX)
    assert end.pending == (request.request_id,)
    assert request.call.id == "c1"

    await agent.respond(CTX, request.request_id, True)
    reply = await agent.call(None, CTX)
    assert reply.text == "deployed"
    assert d.deployed == ["prod"] and d.reads == 1
    state = await agent.load_state(CTX)
    assert [m.role for m in state.history] == ["user", "assistant", "tool", "tool", "assistant"]
    assert tool_pair_problems(state.history) == []
    assert state.get(PARKED) is None and "parked_step" not in state.sections
    assert len(model.requests) == 2  # the model was not asked again for the parked step
    run_ends = await agent.session_log(CTX, types=[RecordType.RUN_END])
    assert [r.payload["status"] for r in run_ends] == ["pending", "completed"]


async def test_new_input_closes_a_parked_step_with_not_run_results() -> None:
    d = Deployer()
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("deploy", "c1", target="prod")]), "understood"]
    )
    agent = agent_for(model, d)
    await agent.call("ship", CTX)
    reply = await agent.call("never mind, just tell me the status", CTX)
    assert reply.text == "understood"
    assert d.deployed == []
    not_run = result(model.requests[1], "c1")
    assert not_run.is_error and "did not run" in not_run.content
    roles = [m.role for m in model.requests[1].messages if m.role != "system"]
    assert roles == ["user", "assistant", "tool", "user"]
    assert (await agent.pending_confirmations(CTX)) == []


async def test_several_requests_in_one_step_are_answered_one_by_one() -> None:
    d = Deployer()
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    call("deploy", "a", target="eu"),
                    call("status", "s"),
                    call("deploy", "b", target="us"),
                ]
            ),
            "both done",
        ]
    )
    agent = agent_for(model, d)
    await agent.call("ship everywhere", CTX)
    first, second = await agent.pending_confirmations(CTX)
    await agent.respond(CTX, first.request_id, True)
    again = await agent.call(None, CTX)  # one answer is still missing: stays pending
    assert again.metadata["harness"] == "pending_confirmation"
    assert [p.request_id for p in await agent.pending_confirmations(CTX)] == [second.request_id]
    assert d.deployed == [] and d.reads == 0
    await agent.respond(CTX, second.request_id, False)
    assert (await agent.call(None, CTX)).text == "both done"
    assert d.deployed == ["eu"] and d.reads == 1
    assert "declined" in result(model.requests[1], "b").content


async def test_answers_are_checked() -> None:
    d = Deployer()
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("deploy", target="x")]), "ok"])
    agent = agent_for(model, d)
    with pytest.raises(ConfirmationError, match="no confirmation request 'perm_nope'"):
        await agent.respond(CTX, "perm_nope", True)
    await agent.call("go", CTX)
    [request] = await agent.pending_confirmations(CTX)
    await agent.respond(CTX, request.request_id, True)
    await agent.respond(CTX, request.request_id, True)  # the same answer again is fine
    with pytest.raises(ConfirmationError, match="already approved"):
        await agent.respond(CTX, request.request_id, False)
    with pytest.raises(TypeError):
        await agent.respond(CTX, request.request_id, "yes")  # type: ignore[arg-type]
    other = RuntimeContext("u", "other-session")
    with pytest.raises(ConfirmationError):
        await agent.respond(other, request.request_id, True)


async def test_an_unanswered_stream_parks_after_the_timeout() -> None:
    d = Deployer()
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("deploy", target="x")]), "ok"])
    agent = agent_for(model, d, confirmation_timeout=0.05)
    events = [e async for e in agent.stream_events("go", CTX)]
    assert isinstance(events[-1], AgentEndEvent) and events[-1].status == "pending"
    assert len(await agent.pending_confirmations(CTX)) == 1


async def test_closing_the_stream_while_asking_keeps_the_step_resumable() -> None:
    d = Deployer()
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("deploy", "c1", target="x")]), "resumed"]
    )
    agent = agent_for(model, d)
    stream = agent.stream_events("go", CTX)
    async for event in stream:
        if isinstance(event, ConfirmationRequestEvent):
            break  # e.g. the browser disconnected
    await stream.aclose()
    [request] = await agent.pending_confirmations(CTX)
    assert request.request_id == event.request_id
    assert [m.role for m in (await agent.load_state(CTX)).history] == ["user"]
    await agent.respond(CTX, request.request_id, True)
    assert (await agent.call(None, CTX)).text == "resumed"
    assert d.deployed == ["x"]


async def test_an_answer_posted_before_the_run_waits_is_not_lost() -> None:
    d = Deployer()
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("deploy", "c1", target="x")]), "done"])
    agent = agent_for(model, d)
    await agent.call("go", CTX)
    [request] = await agent.pending_confirmations(CTX)

    async with agent._locks.hold(agent.name, "u", "s"):  # a call of the session is starting
        answering = asyncio.create_task(agent.respond(CTX, request.request_id, True))
        await asyncio.sleep(0.01)
        assert not answering.done()  # it cannot store the answer while the call holds the lock
    # the lock is released to the waiting answer, which stores it
    await answering
    assert (await agent.call(None, CTX)).text == "done"
    assert d.deployed == ["x"]


async def test_respond_reaches_a_run_that_started_waiting_meanwhile() -> None:
    d = Deployer()
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("deploy", "c1", target="x")]), "done"])
    agent = agent_for(model, d)
    await agent.call("go", CTX)
    [request] = await agent.pending_confirmations(CTX)
    events: list[Event] = []

    async def resume() -> None:
        async for event in agent.stream_events(None, CTX):
            events.append(event)

    async with agent._locks.hold(agent.name, "u", "s"):
        running = asyncio.create_task(resume())  # queued behind the lock
        await asyncio.sleep(0)
        answering = asyncio.create_task(agent.respond(CTX, request.request_id, True))
        await asyncio.sleep(0.01)
    await asyncio.wait_for(asyncio.gather(running, answering), timeout=5)
    assert d.deployed == ["x"]
    assert isinstance(events[-1], AgentEndEvent) and events[-1].status == "completed"


async def test_dont_ask_refuses_instead_of_asking() -> None:
    d = Deployer()
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("deploy", "c1", target="x")]), "ok"])
    agent = agent_for(model, d, permission_mode="dont_ask")
    events = [e async for e in agent.stream_events("go", CTX)]
    assert not any(isinstance(e, ConfirmationRequestEvent) for e in events)
    refused = result(model.requests[1], "c1")
    assert refused.is_error and "Permission denied" in refused.content
    assert "dont_ask" in refused.content and d.deployed == []


async def test_deny_beats_allow_through_the_agent() -> None:
    d = Deployer()
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[call("deploy", "p", target="prod"), call("deploy", "s", target="st")]
            ),
            "ok",
        ]
    )
    agent = agent_for(
        model,
        d,
        permission_mode="bypass",
        permission_rules=[
            PermissionRule.allow("deploy"),
            PermissionRule.deny("deploy", target="prod"),
        ],
    )
    await agent.call("go", CTX)
    assert "Permission denied" in result(model.requests[1], "p").content
    assert d.deployed == ["st"]


async def test_session_mode_and_rules_override_the_agent() -> None:
    d = Deployer()
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[call("deploy", "a", target="x")]),
            "one",
            ScriptedResponse(tool_calls=[call("deploy", "b", target="y")]),
            "two",
        ]
    )
    agent = agent_for(model, d)
    await agent.set_permission_mode(CTX, "bypass")
    assert (await agent.call("go", CTX)).text == "one"
    await agent.set_permission_rules(CTX, [PermissionRule.deny("deploy")])
    assert (await agent.call("again", CTX)).text == "two"
    assert d.deployed == ["x"]
    other = RuntimeContext("u", "elsewhere")  # other sessions keep the agent's default mode
    model.add(ScriptedResponse(tool_calls=[call("deploy", target="z")]))
    assert (await agent.call("go", other)).metadata["harness"] == "pending_confirmation"
    actions = [
        r.payload["action"]
        for r in await agent.session_log(CTX, types=[RecordType.PERMISSION_CHANGED])
    ]
    assert actions == ["mode", "rules"]


async def test_without_permissions_nothing_asks() -> None:
    d = Deployer()
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("deploy", target="x")]), "ok"])
    agent = HarnessAgent("free", model, tools=d.tools)
    events = [e async for e in agent.stream_events("go", CTX)]
    assert not any(isinstance(e, ConfirmationRequestEvent) for e in events)
    assert d.deployed == ["x"]


async def test_sessions_wait_independently() -> None:
    d = Deployer()
    model = ScriptedModel(
        responder=lambda request: (
            "done"
            if request.messages[-1].role == "tool"
            else ScriptedResponse(tool_calls=[call("deploy", target=request.messages[-1].text)])
        )
    )
    agent = agent_for(model, d)
    a, b = RuntimeContext("u", "a"), RuntimeContext("u", "b")
    asked: dict[str, str] = {}

    async def run(ctx: RuntimeContext, target: str) -> str:
        status = ""
        async for event in agent.stream_events(target, ctx):
            if isinstance(event, ConfirmationRequestEvent):
                asked[target] = event.request_id
            if isinstance(event, AgentEndEvent):
                status = event.status
        return status

    ra = asyncio.create_task(run(a, "alpha"))
    rb = asyncio.create_task(run(b, "beta"))
    while len(asked) < 2:
        await asyncio.sleep(0.005)
    with pytest.raises(ConfirmationError):
        await agent.respond(a, asked["beta"], True)  # b's request is not a's
    await agent.respond(b, asked["beta"], True)
    assert await asyncio.wait_for(rb, 5) == "completed"
    assert not ra.done()
    await agent.respond(a, asked["alpha"], False)
    assert await asyncio.wait_for(ra, 5) == "completed"
    assert d.deployed == ["beta"]
