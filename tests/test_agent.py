"""The ReAct loop through the public API, driven by ScriptedModel."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from harnessed import (
    AgentEndEvent,
    ErrorEvent,
    HarnessAgent,
    MaxItersEvent,
    ModelError,
    Msg,
    RuntimeContext,
    ToolContext,
    ToolError,
    ToolResultEvent,
    tool,
)
from harnessed.context import PrepareInfo
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.state import AgentState, InMemoryStateStore
from tests.support.fixtures import call, collect


@tool(read_only=True)
async def slow_echo(text: str, delay: float = 0.2) -> str:
    """Echo text after a delay.

    Args:
        text: What to echo.
        delay: Seconds to wait.
    """
    await asyncio.sleep(delay)
    return text


@tool
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


@tool
def refuse() -> str:
    """Always refuses."""
    raise ToolError("the vault is closed")


def texts(request: ModelRequest) -> list[str]:
    """The conversation part of a request (without the system message)."""
    return [m.text for m in request.messages if m.role != "system"]


async def test_multi_step_tool_use_feeds_results_back() -> None:
    model = ScriptedModel(
        [
            ScriptedResponse("dividing", [call("divide", "c1", a=6, b=3)]),
            ScriptedResponse(tool_calls=[call("divide", "c2", a=1, b=4)]),
            "6/3 = 2 and 1/4 = 0.25",
        ]
    )
    agent = HarnessAgent("calc", model, sys_prompt="You divide.", tools=[divide])
    reply = await agent.call("divide things")
    assert reply.text == "6/3 = 2 and 1/4 = 0.25"
    assert len(model.requests) == 3
    second = model.requests[1].messages
    assert second[0].role == "system" and "You divide." in second[0].text
    assert [m.role for m in second] == ["system", "user", "assistant", "tool"]
    assert second[-1].tool_results[0].tool_use_id == "c1"
    assert second[-1].tool_results[0].content == "2.0"
    third = model.requests[2].messages
    assert third[-1].tool_results[0].content == "0.25"
    assert [t.name for t in model.requests[0].tools] == ["divide"]


async def test_parallel_safe_calls_run_concurrently_and_keep_call_order() -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    call("slow_echo", "a", text="first", delay=0.3),
                    call("slow_echo", "b", text="second", delay=0.05),
                    call("slow_echo", "c", text="third", delay=0.3),
                ]
            ),
            "ok",
        ]
    )
    agent = HarnessAgent("par", model, tools=[slow_echo])
    started = time.perf_counter()
    events = await collect(agent, "go")
    elapsed = time.perf_counter() - started
    assert elapsed < 0.55, f"three calls of 0.3+0.05+0.3 s took {elapsed:.2f}s: not parallel"
    finished = [e.result.tool_use_id for e in events if isinstance(e, ToolResultEvent)]
    assert finished[0] == "b"  # the fast one finishes first and is reported first
    results = model.requests[1].messages[-3:]
    assert [m.tool_results[0].tool_use_id for m in results] == ["a", "b", "c"]
    assert [m.text for m in results] == ["first", "second", "third"]


async def test_unsafe_calls_run_one_after_another() -> None:
    order: list[str] = []

    @tool
    async def step(label: str) -> str:
        """Record a step."""
        order.append(f"start {label}")
        await asyncio.sleep(0.02)
        order.append(f"end {label}")
        return label

    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("step", label="x"), call("step", label="y")]), "done"]
    )
    await HarnessAgent("seq", model, tools=[step]).call("go")
    assert order == ["start x", "end x", "start y", "end y"]


@pytest.mark.parametrize(
    ("tool_call", "expected"),
    [
        (call("divide", a=1, b=0), "Tool 'divide' failed: ZeroDivisionError"),
        (call("refuse"), "Error: the vault is closed"),
        (call("missing_tool", x=1), "Unknown tool 'missing_tool'. Available tools:"),
        (call("divide", a=1), "b: required argument is missing"),
        (call("divide", a="one", b=2), "Invalid arguments for tool 'divide': a:"),
        (call("divide", a=1, b=2, c=3), "c: unexpected argument"),
    ],
    ids=["raises", "tool-error", "unknown", "missing-arg", "bad-type", "extra-arg"],
)
async def test_tool_failures_become_error_results_and_the_loop_goes_on(
    tool_call: ScriptedToolCall, expected: str
) -> None:
    model = ScriptedModel([ScriptedResponse(tool_calls=[tool_call]), "recovered"])
    agent = HarnessAgent("err", model, tools=[divide, refuse])
    reply = await agent.call("try")
    assert reply.text == "recovered"
    result = model.requests[1].messages[-1].tool_results[0]
    assert result.is_error
    assert expected in result.content


async def test_invalid_json_arguments_are_reported() -> None:
    from harnessed.messages import INVALID_ARGUMENTS_KEY, ToolUseBlock

    bad = Msg.assistant([ToolUseBlock("x1", "divide", {INVALID_ARGUMENTS_KEY: '{"a": 1,'})])
    model = ScriptedModel([bad, "ok"])
    await HarnessAgent("json", model, tools=[divide]).call("go")
    result = model.requests[1].messages[-1].tool_results[0]
    assert (
        result.is_error and "not a JSON object" in result.content and '{"a": 1,' in result.content
    )


async def test_max_iters_ends_with_event_and_clear_reply() -> None:
    model = ScriptedModel(
        responder=lambda req: ScriptedResponse(tool_calls=[call("divide", a=1, b=1)])
    )
    agent = HarnessAgent("loop", model, tools=[divide], max_iters=3)
    events = await collect(agent, "never stop")
    assert len(model.requests) == 3
    assert any(isinstance(e, MaxItersEvent) and e.max_iters == 3 for e in events)
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.status == "max_iters"
    assert "max_iters" in end.reply.text and end.iterations == 3
    # the stored history is valid: every call has its result, then the stop notice
    state = await agent.load_state()
    assert state.history[-1].metadata["harness"] == "max_iters"
    assert state.history[-2].role == "tool"


async def test_events_come_in_order() -> None:
    model = ScriptedModel(
        [ScriptedResponse("let me", [call("divide", "c1", a=4, b=2)], thinking="hmm"), "two"]
    )
    events = await collect(HarnessAgent("ev", model, tools=[divide]), "4/2?")
    types = [e.type for e in events]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    first_call = types[: types.index("tool_result") + 1]
    assert first_call == [
        "agent_start",
        "custom",  # context_build, before the model call
        "model_call_start",
        "thinking_delta",
        "text_delta",
        "tool_call",
        "model_call_end",
        "tool_result",
    ]
    assert types[types.index("tool_result") + 1 :] == [
        "custom",
        "model_call_start",
        "text_delta",
        "model_call_end",
        "agent_end",
    ]
    assert len({e.run_id for e in events}) == 1
    assert all(e.session_id == "ev" for e in events)  # session defaults to the agent name


async def test_custom_events_from_tools_are_streamed_while_the_tool_runs() -> None:
    seen_before_finish: list[str] = []

    @tool
    async def progress(ctx: ToolContext) -> str:
        """Reports progress."""
        ctx.emit("progress", {"pct": 50})
        await asyncio.sleep(0.2)
        return "finished"

    model = ScriptedModel([ScriptedResponse(tool_calls=[call("progress")]), "ok"])
    agent = HarnessAgent("emit", model, tools=[progress])
    started = time.perf_counter()
    async for event in agent.stream_events("go"):
        if event.type == "custom" and event.name == "progress":
            seen_before_finish.append(f"{event.name}@{time.perf_counter() - started:.2f}")
            assert time.perf_counter() - started < 0.15
    assert seen_before_finish and seen_before_finish[0].startswith("progress@")


async def test_model_error_surfaces_as_error_event_and_keeps_stored_state() -> None:
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[call("divide", a=1, b=1)]), ModelError("provider down")]
    )
    agent = HarnessAgent("fail", model, tools=[divide])
    events: list = []
    with pytest.raises(ModelError, match="provider down"):
        async for event in agent.stream_events("go"):
            events.append(event)
    assert isinstance(events[-1], ErrorEvent) and events[-1].error_type == "ModelError"
    state = await agent.load_state()
    # the completed first step was saved; the failed step left nothing half-done
    assert [m.role for m in state.history] == ["user", "assistant", "tool"]


async def test_prepare_seam_sees_state_and_can_change_the_request() -> None:
    seen: list[tuple[int, int, str]] = []

    async def prepare(state: AgentState, request: ModelRequest, info: PrepareInfo) -> ModelRequest:
        seen.append((info.iteration, len(state.history), info.purpose))
        extra = Msg.user("<note>prepared</note>")
        return ModelRequest(
            messages=(*request.messages, extra), tools=request.tools, call_id=request.call_id
        )

    model = ScriptedModel([ScriptedResponse(tool_calls=[call("divide", a=1, b=1)]), "done"])
    agent = HarnessAgent("prep", model, tools=[divide], prepare=prepare)
    await agent.call("go")
    assert seen == [(1, 1, "reasoning"), (2, 3, "reasoning")]
    assert all(r.messages[-1].text == "<note>prepared</note>" for r in model.requests)
    state = await agent.load_state()
    assert all("prepared" not in m.text for m in state.history)  # projections never stored


async def test_conversation_continues_across_calls_and_sessions_are_separate() -> None:
    model = ScriptedModel(["hi Ann", "you are Ann", "who?"])
    agent = HarnessAgent("mem", model)
    ann = RuntimeContext("u1", "s1")
    await agent.call("I am Ann", ann)
    await agent.call("who am I?", ann)
    assert texts(model.requests[1]) == ["I am Ann", "hi Ann", "who am I?"]
    await agent.call("who am I?", RuntimeContext("u1", "s2"))
    assert texts(model.requests[2]) == ["who am I?"]


async def test_state_survives_a_new_agent_object_with_the_same_workspace(tmp_path: Path) -> None:
    first = HarnessAgent("ws", ScriptedModel(["noted"]), workspace=tmp_path)
    await first.call("remember the number 42", RuntimeContext("u", "s"))
    model = ScriptedModel(["it was 42"])
    second = HarnessAgent("ws", model, workspace=tmp_path)  # as if in a new process
    await second.call("what was the number?", RuntimeContext("u", "s"))
    assert texts(model.requests[0]) == [
        "remember the number 42",
        "noted",
        "what was the number?",
    ]


async def test_one_session_is_serialized_and_different_sessions_run_in_parallel() -> None:
    active: dict[str, int] = {}
    peak: dict[str, int] = {}

    async def responder(request: ModelRequest) -> str:
        session = request.messages[-1].text.split()[0]
        active[session] = active.get(session, 0) + 1
        peak[session] = max(peak.get(session, 0), active[session])
        peak["all"] = max(peak.get("all", 0), sum(active.values()))
        await asyncio.sleep(0.1)
        active[session] -= 1
        return "ok"

    agent = HarnessAgent(
        "conc", ScriptedModel(responder=responder), state_store=InMemoryStateStore()
    )
    started = time.perf_counter()
    await asyncio.gather(
        *(agent.call(f"A {i}", RuntimeContext("u", "A")) for i in range(3)),
        *(agent.call(f"B {i}", RuntimeContext("u", "B")) for i in range(3)),
    )
    elapsed = time.perf_counter() - started
    assert peak["A"] == 1 and peak["B"] == 1  # never two calls of one session at once
    assert peak["all"] == 2  # but the two sessions overlapped
    assert 0.3 <= elapsed < 0.55
    state_a = await agent.load_state(RuntimeContext("u", "A"))
    assert len(state_a.history) == 6  # three whole turns, none lost or interleaved


async def test_model_strings_and_bad_configuration_fail_clearly() -> None:
    with pytest.raises(ValueError, match="provider:model"):
        HarnessAgent("x", "gpt-4.1")
    with pytest.raises(ValueError, match="unknown model provider 'mystery'"):
        HarnessAgent("x", "mystery:model")
    with pytest.raises(ValueError, match="max_iters"):
        HarnessAgent("x", ScriptedModel(), max_iters=0)
    with pytest.raises(ValueError, match="name"):
        HarnessAgent("bad name!", ScriptedModel())
    with pytest.raises(ValueError, match="already registered"):
        HarnessAgent("x", ScriptedModel(), tools=[divide, divide])


async def test_openai_model_string_builds_the_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    agent = HarnessAgent("x", "openai:gpt-4.1-mini")
    assert type(agent.model).__name__ == "OpenAIChatModel"
    assert agent.model.name == "gpt-4.1-mini"
    assert agent.model.context_window == 1_047_576


def test_call_sync_works_outside_an_event_loop() -> None:
    agent = HarnessAgent("sync", ScriptedModel(["hello"]))
    assert agent.call_sync("hi").text == "hello"


async def test_close_releases_every_model_once(tmp_path: Path) -> None:
    from harnessed import CompactionConfig, MemoryConfig

    closed: list[str] = []

    class Closing(ScriptedModel):
        async def aclose(self) -> None:
            closed.append(self.name)

    main, summary, memory = Closing(name="main"), Closing(name="sum"), Closing(name="mem")
    agent = HarnessAgent(
        "closer",
        main,
        workspace=tmp_path,
        compaction=CompactionConfig(model=summary),
        memory=MemoryConfig(model=memory),
    )
    assert [m.name for m in agent.models()] == ["main", "sum", "mem"]
    await agent.close()
    assert sorted(closed) == ["main", "mem", "sum"]
    shared = HarnessAgent("shared", Closing(name="one"), workspace=tmp_path / "b")
    assert [m.name for m in shared.models()] == ["one"]
