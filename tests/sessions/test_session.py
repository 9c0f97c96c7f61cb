"""AgentSession: submit, idempotency, steer, interrupt (in a tool call, while streaming,
while asking), resume — also from a new process (BEHAVIOUR §13)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.events import (
    ConfirmationRequestEvent,
    CustomEvent,
    ModelCallStartEvent,
    TextDeltaEvent,
)
from harnessed.log import RecordType
from harnessed.sessions import (
    IdempotencyConflictError,
    NothingToResumeError,
    SessionBusyError,
    SessionIdleError,
)
from harnessed.state.agent_state import AgentState
from tests.sessions.helpers import (
    Blocker,
    DrippingModel,
    ScriptedModel,
    make_agent,
    texts,
    tool_step,
)

CTX = RuntimeContext("u1", "s1")


async def assert_log_and_state_agree(agent: HarnessAgent) -> None:
    """Every message is logged once, and the saved history is exactly the logged messages."""
    logged = [m.id for m in await agent.session_messages(CTX)]
    assert len(logged) == len(set(logged))
    assert [m.id for m in (await agent.load_state(CTX)).history] == logged


async def test_submit_runs_the_turn_and_streams_its_events() -> None:
    agent = make_agent(ScriptedModel(["hello there, friend"], chunk_size=4))
    session = agent.session(CTX)
    assert agent.session(CTX) is session
    turn = await session.submit("hi")
    end = await turn.result()
    assert end.status == "completed" and end.reply.text == "hello there, friend"
    deltas = [e.text for e in [e async for e in turn.events()] if isinstance(e, TextDeltaEvent)]
    assert "".join(deltas) == "hello there, friend" and len(deltas) > 1
    assert [m.text for m in await session.history()] == ["hi", "hello there, friend"]
    assert turn.status == "completed" and session.tasks == [turn]


async def test_turns_queue_in_order() -> None:
    model = ScriptedModel(["one", "two", "three"])
    session = make_agent(model).session(CTX)
    turns = [await session.submit(t) for t in ("a", "b", "c")]
    ends = [await t.result() for t in turns]
    assert [e.reply.text for e in ends] == ["one", "two", "three"]
    assert [m.text for m in await session.history()] == ["a", "one", "b", "two", "c", "three"]


async def test_same_idempotency_key_is_the_same_turn(tmp_path: Path) -> None:
    model = ScriptedModel(["first reply", "other reply"])
    agent = make_agent(model, tmp_path, shell=False)
    session = agent.session(CTX)
    turn = await session.submit("do it", idempotency_key="k1")
    again = await session.submit("do it", idempotency_key="k1")
    assert again is turn
    await turn.result()
    with pytest.raises(IdempotencyConflictError, match="k1"):
        await session.submit("something else", idempotency_key="k1")
    assert len(model.requests) == 1
    # a new process (new agent object, same workspace) finds the key in the session log
    fresh_model = ScriptedModel([])
    fresh = make_agent(fresh_model, tmp_path, shell=False).session(CTX)
    replayed = await fresh.submit("do it", idempotency_key="k1")
    end = await replayed.result()
    assert end.reply.text == "first reply" and end.status == "completed"
    assert fresh_model.requests == []
    with pytest.raises(IdempotencyConflictError):
        await fresh.submit("changed", idempotency_key="k1")
    users = [m for m in await fresh.history() if m.role == "user"]
    assert [m.text for m in users] == ["do it"]


async def test_steer_is_seen_at_the_next_reasoning_step() -> None:
    blocker = Blocker()
    model = ScriptedModel([tool_step("wait_here", label="x"), "adjusted answer"])
    session = make_agent(model, tools=[blocker.tool]).session(CTX)
    with pytest.raises(SessionIdleError):
        session.steer("too early")
    turn = await session.submit("start")
    await blocker.started.wait()
    steered = session.steer("use the blue one")
    blocker.release.set()
    end = await turn.result()
    assert end.status == "completed"
    second = model.requests[1]
    assert texts(second)[-1] == "use the blue one"
    events = [e async for e in turn.events()]
    assert any(isinstance(e, CustomEvent) and e.name == "steer" for e in events)
    history = await session.history()
    assert steered.id in [m.id for m in history]


async def test_steering_during_the_final_answer_gets_another_step() -> None:
    model = DrippingModel(["a long final answer here", "ok, noted"], gap=0.03)
    session = make_agent(model).session(CTX)
    turn = await session.submit("go")
    async for event in turn.events():
        if isinstance(event, TextDeltaEvent):
            session.steer("also mention cats")
            break
    end = await turn.result()
    assert end.reply.text == "ok, noted" and len(model.requests) == 2
    assert texts(model.requests[1])[-2:] == ["a long final answer here", "also mention cats"]


async def test_interrupt_during_a_tool_call_then_resume(tmp_path: Path) -> None:
    blocker = Blocker()
    model = ScriptedModel([tool_step("wait_here", id="c1", label="x")])
    agent = make_agent(model, tmp_path, shell=False, tools=[blocker.tool])
    session = agent.session(CTX)
    turn = await session.submit("please wait")
    await blocker.started.wait()
    assert session.interrupt() is turn
    end = await turn.result()
    assert end.status == "interrupted" and blocker.finished == 0
    history = await session.history()
    result = history[-1].tool_results[0]
    assert result.tool_use_id == "c1" and result.is_error and "Interrupted" in result.content
    await assert_log_and_state_agree(agent)
    ends = await agent.session_log(CTX, types=[RecordType.RUN_END])
    assert ends[-1].payload["status"] == "interrupted"
    # resume in a "new process": a fresh agent over the same workspace
    model2 = ScriptedModel(["picked up where I left off"])
    resumed = await make_agent(model2, tmp_path, shell=False).session(CTX).resume()
    end2 = await resumed.result()
    assert end2.status == "completed" and end2.reply.text == "picked up where I left off"
    assert "Interrupted" in texts(model2.requests[0])[-1]


async def test_interrupt_while_streaming_keeps_the_partial_text() -> None:
    model = DrippingModel(["one two three four five six seven eight", "rest of it"], gap=0.05)
    agent = make_agent(model)
    session = agent.session(CTX)
    turn = await session.submit("count")
    seen = 0
    async for event in turn.events():
        if isinstance(event, TextDeltaEvent):
            seen += 1
            if seen == 2:
                session.interrupt()
    end = await turn.result()
    assert end.status == "interrupted"
    assert model.closed == 1 and len(model.sent) < 8  # the stream was closed early
    partial = (await session.history())[-1]
    assert partial.role == "assistant" and partial.metadata.get("interrupted") is True
    assert partial.text.startswith("one two") and partial.text != model.replies
    assert end.reply.id == partial.id
    await assert_log_and_state_agree(agent)
    end2 = await (await session.resume()).result()
    assert end2.reply.text == "rest of it"
    assert texts(model.requests[1])[-1] == partial.text


async def test_interrupt_before_anything_was_said_resumes_the_first_step() -> None:
    model = DrippingModel(["never said", "answer after resume"], lead=5.0)
    agent = make_agent(model)
    session = agent.session(CTX)
    turn = await session.submit("first ever message")
    async for event in turn.events():
        if isinstance(event, ModelCallStartEvent):
            session.interrupt()
    end = await turn.result()
    assert end.status == "interrupted" and model.sent == []
    assert [m.text for m in (await agent.load_state(CTX)).history] == ["first ever message"]
    model.lead = 0.0
    end = await (await session.resume()).result()
    assert end.reply.text == "answer after resume"
    assert texts(model.requests[1])[-1] == "first ever message"


async def test_interrupt_while_asking_parks_the_step_and_resume_asks_again() -> None:
    blocker = Blocker()
    blocker.release.set()
    model = ScriptedModel([tool_step("wait_here", id="c9", label="y"), "finished"])
    agent = make_agent(model, tools=[blocker.tool], permission_mode="default")
    session = agent.session(CTX)
    turn = await session.submit("go")
    async for event in turn.events():
        if isinstance(event, ConfirmationRequestEvent):
            session.interrupt()
    end = await turn.result()
    assert end.status == "interrupted" and end.pending
    resumed = await session.resume()
    async for event in resumed.events():
        if isinstance(event, ConfirmationRequestEvent):
            await session.respond(event.request_id, True)
    assert (await resumed.result()).reply.text == "finished"
    assert blocker.finished == 1


async def test_no_wait_submit_on_a_busy_session_is_refused() -> None:
    blocker = Blocker()
    model = ScriptedModel([tool_step("wait_here", label="x"), "done", "second"])
    session = make_agent(model, tools=[blocker.tool]).session(CTX)
    turn = await session.submit("one")
    await blocker.started.wait()
    with pytest.raises(SessionBusyError, match="busy"):
        await session.submit("two", wait=False)
    queued = await session.submit("two")
    assert queued.status == "queued"
    blocker.release.set()
    assert (await turn.result()).reply.text == "done"
    assert (await queued.result()).reply.text == "second"


async def test_session_events_follow_every_turn() -> None:
    session = make_agent(ScriptedModel(["a", "b"])).session(CTX)
    seen: list[str] = []

    async def follow() -> None:
        async for event in session.events():
            seen.append(event.type)
            if event.type == "agent_end" and seen.count("agent_end") == 2:
                return

    follower = asyncio.create_task(follow())
    await asyncio.sleep(0)
    await session.submit("x")
    await session.submit("y")
    await asyncio.wait_for(follower, 5)
    assert seen.count("agent_start") == 2


async def test_interrupt_while_permissions_are_checked_logs_the_step_once() -> None:
    checking = asyncio.Event()
    never = asyncio.Event()

    async def slow_check(call: object, state: AgentState) -> None:
        checking.set()
        await never.wait()

    blocker = Blocker()
    model = ScriptedModel([tool_step("wait_here", id="c5", label="z"), "after"])
    agent = make_agent(
        model,
        tools=[blocker.tool],
        permission_mode="default",
        permission_checks={"wait_here": slow_check},
    )
    session = agent.session(CTX)
    turn = await session.submit("go")
    await checking.wait()
    session.interrupt()
    end = await turn.result()
    assert end.status == "interrupted" and not end.pending and blocker.finished == 0
    result = (await session.history())[-1].tool_results[0]
    assert result.tool_use_id == "c5" and "Interrupted" in result.content
    await assert_log_and_state_agree(agent)


async def test_resume_needs_something_to_continue() -> None:
    session = make_agent(ScriptedModel(["done"])).session(CTX)
    with pytest.raises(NothingToResumeError, match="no turn yet"):
        await session.resume()
    await (await session.submit("hi")).result()
    with pytest.raises(NothingToResumeError, match="completed"):
        await session.resume()
