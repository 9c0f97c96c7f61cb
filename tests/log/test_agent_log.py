"""What the agent writes to the session log during calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed import HarnessAgent, ModelError, RuntimeContext, ToolContext, tool
from harnessed.log import RecordType
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall


@tool(read_only=True)
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def script() -> ScriptedModel:
    return ScriptedModel(
        [ScriptedResponse("shouting", [ScriptedToolCall("shout", {"text": "hi"}, id="c1")]), "HI"]
    )


async def test_a_call_records_everything_in_order(tmp_path: Path) -> None:
    agent = HarnessAgent("logger", script(), tools=[shout], workspace=tmp_path)
    ctx = RuntimeContext("u1", "s1", run_id="run-1")
    await agent.call("shout hi", ctx)
    records = await agent.session_log(ctx)
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    assert [r.type for r in records] == [
        "run/start",
        "message",
        "context/build",
        "message",
        "tool/execution",
        "message",
        "context/build",
        "message",
        "run/end",
    ]
    assert {r.run_id for r in records} == {"run-1"}
    assert len({r.turn_id for r in records}) == 1
    messages = await agent.session_messages(ctx)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[2].text == "HI"
    execution = records[4].payload
    assert execution["call_id"] == "c1" and execution["tool"] == "shout"
    assert not execution["is_error"]
    build = records[2].payload
    assert build["status"] == "passed" and build["context_manifest"]["validation"] == "passed"
    assert records[-1].payload["status"] == "completed"
    # the log is a JSONL file in the workspace, where BEHAVIOUR.md puts it
    assert (tmp_path / "agents/logger/sessions/u1/s1.log.jsonl").is_file()


async def test_a_failed_call_records_the_error(tmp_path: Path) -> None:
    agent = HarnessAgent("logger", ScriptedModel([ModelError("provider down")]), workspace=tmp_path)
    ctx = RuntimeContext("u1", "s1")
    with pytest.raises(ModelError):
        await agent.call("hello", ctx)
    records = await agent.session_log(ctx)
    assert [r.type for r in records][-2:] == ["error", "run/end"]
    assert records[-2].payload == {"error_type": "ModelError", "message": "provider down"}
    assert records[-1].payload["status"] == "error"
    # the input is in the log, and so in the history: it is never lost (BEHAVIOUR.md §8)
    assert (await agent.session_messages(ctx))[0].text == "hello"
    assert [m.text for m in (await agent.load_state(ctx)).history] == ["hello"]


async def test_sessions_are_listed_per_user_and_the_log_survives_restarts(tmp_path: Path) -> None:
    agent = HarnessAgent("logger", ScriptedModel(["a", "b", "c"]), workspace=tmp_path)
    await agent.call("one", RuntimeContext("alice", "s1"))
    await agent.call("two", RuntimeContext("alice", "s2"))
    await agent.call("three", RuntimeContext("bob", "s9"))
    again = HarnessAgent("logger", ScriptedModel(), workspace=tmp_path)
    assert sorted(s.session_id for s in await again.sessions("alice")) == ["s1", "s2"]
    assert [s.session_id for s in await again.sessions("bob")] == ["s9"]
    log = await again.session_log(RuntimeContext("alice", "s2"), types=[RecordType.MESSAGE])
    assert [r.message.text for r in log if r.message] == ["two", "b"]


async def test_custom_events_are_recorded() -> None:
    @tool
    def announce(ctx: ToolContext) -> str:
        """Announce progress."""
        ctx.emit("progress", {"pct": 10})
        return "ok"

    model = ScriptedModel([ScriptedResponse(tool_calls=[ScriptedToolCall("announce")]), "done"])
    agent = HarnessAgent("events", model, tools=[announce])
    await agent.call("go")
    custom = await agent.session_log(types=["custom"])
    assert [r.payload for r in custom] == [{"name": "progress", "data": {"pct": 10}}]
