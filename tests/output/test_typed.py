"""Typed final answers through the public API, driven by ScriptedModel (both ways: the
final-answer tool, and native structured output)."""

from __future__ import annotations

import dataclasses
import json
from typing import Literal

import pydantic
import pytest
from typing_extensions import TypedDict

from harnessed import AgentEndEvent, HarnessAgent, RuntimeContext, tool
from harnessed.log import RecordType
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.output import (
    FINAL_TOOL,
    OutputRefusedError,
    OutputSpec,
    OutputValidationError,
)

CTX = RuntimeContext("u", "s")


class Ticket(pydantic.BaseModel):
    title: str
    severity: Literal["low", "high"]
    tags: list[str] = []


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Person(TypedDict):
    name: str
    age: int


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def final(**args: object) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(FINAL_TOOL, args)])


def offered(request: ModelRequest) -> dict[str, object]:
    return {t.name: dict(t.parameters) for t in request.tools}


async def test_a_model_without_native_output_answers_through_the_final_tool() -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(tool_calls=[ScriptedToolCall("lookup", {"key": "a"})]),
            final(title="Login fails", severity="high", tags=["auth"]),
            "a later plain answer",
        ]
    )
    agent = HarnessAgent("t", model, tools=[lookup], output_type=Ticket)
    result = await agent.call("file a ticket", CTX)
    assert result.status == "completed"
    assert result.output == Ticket(title="Login fails", severity="high", tags=["auth"])
    assert json.loads(result.text) == result.output.model_dump()
    assert result.metadata["output"] == {
        "title": "Login fails",
        "severity": "high",
        "tags": ["auth"],
    }
    tools = offered(model.requests[0])
    assert tools[FINAL_TOOL]["required"] == ["title", "severity"]  # the type's own schema
    assert model.requests[0].output is None
    # the history stays valid: the final call has its result; the next call goes on from it
    state = await agent.load_state(CTX)
    final_call = state.history[-3].tool_uses[0]
    assert state.history[-2].tool_results[0].tool_use_id == final_call.id
    plain = await agent.call("thanks", CTX, output_type=str)  # per call: free text again
    assert plain.output == "a later plain answer"
    assert FINAL_TOOL not in offered(model.requests[-1])


async def test_an_invalid_answer_goes_back_with_the_errors_and_is_retried() -> None:
    model = ScriptedModel(
        [
            "Here is the ticket: Login fails",  # plain text: told to use the tool
            final(title="Login fails", severity="urgent"),  # not in the Literal
            final(title="Login fails", severity="high"),
        ]
    )
    agent = HarnessAgent("t", model, output_type=Ticket)
    events = [e async for e in agent.stream_events("file it", CTX, confirmations="park")]
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.output == Ticket(
        title="Login fails", severity="high"
    )
    assert end.to_dict()["output"] == {"title": "Login fails", "severity": "high", "tags": []}
    second, third = model.requests[1], model.requests[2]
    assert f"call the {FINAL_TOOL} tool" in second.messages[-1].text
    error = third.messages[-1].tool_results[0]
    assert error.is_error and "severity" in error.content and "'low' or 'high'" in error.content
    retries = [e for e in events if getattr(e, "name", None) == "output_retry"]
    assert [r.data["attempt"] for r in retries] == [1, 2]  # type: ignore[attr-defined]


async def test_retries_run_out_with_a_clear_error_and_the_log_keeps_every_answer() -> None:
    model = ScriptedModel([final(title="x", severity="bad")] * 3)
    agent = HarnessAgent("t", model, output_type=Ticket, output_retries=1)
    with pytest.raises(OutputValidationError, match="did not match Ticket after 2 attempts") as e:
        await agent.call("file it", CTX)
    assert e.value.attempts == 2 and "severity" in e.value.errors
    assert len(model.requests) == 2
    records = await agent.session_log(CTX)
    assert [r.payload["error_type"] for r in records if r.type == RecordType.ERROR] == [
        "OutputValidationError"
    ]
    state = await agent.load_state(CTX)  # every call of the log has its result
    calls = {c.id for m in state.history for c in m.tool_uses}
    assert calls == {r.tool_use_id for m in state.history for r in m.tool_results}


@pytest.mark.parametrize(
    ("output_type", "text", "expected"),
    [
        (
            Ticket,
            '{"title": "t", "severity": "low", "tags": []}',
            Ticket(title="t", severity="low"),
        ),
        (Point, '```json\n{"x": 1, "y": 2}\n```', Point(1, 2)),
        (Person, '{"name": "Ada", "age": 36}', {"name": "Ada", "age": 36}),
        (int, '{"result": 42}', 42),
        (list[str], '{"result": ["a", "b"]}', ["a", "b"]),
    ],
)
async def test_native_structured_output_validates_the_json_text(
    output_type: object, text: str, expected: object
) -> None:
    model = ScriptedModel([text], structured_output="native")
    agent = HarnessAgent("n", model)
    result = await agent.call("go", CTX, output_type=output_type)
    assert result.output == expected
    fmt = model.requests[0].output
    assert fmt is not None and fmt.strict
    assert fmt.schema["type"] == "object" and fmt.schema["additionalProperties"] is False
    assert FINAL_TOOL not in offered(model.requests[0])


async def test_native_strict_schema_requires_every_field_and_drops_defaults() -> None:
    spec = OutputSpec(Ticket)
    assert spec.model_schema["required"] == ["title", "severity", "tags"]
    assert "default" not in json.dumps(spec.model_schema)
    assert spec.schema["required"] == ["title", "severity"]  # the tool form keeps defaults
    free = OutputSpec(dict[str, int])  # a free-form mapping has no strict form
    assert not free.strict and free.wrapped


async def test_native_malformed_json_is_retried() -> None:
    model = ScriptedModel(['{"x": 1, "y": ', '{"x": 1, "y": 2}'], structured_output="native")
    agent = HarnessAgent("n", model, output_type=Point)
    result = await agent.call("go", CTX)
    assert result.output == Point(1, 2)
    nudge = model.requests[1].messages[-1]
    assert nudge.role == "user" and "not JSON" in nudge.text


async def test_a_refusal_ends_the_call_with_its_own_error() -> None:
    model = ScriptedModel(
        [ScriptedResponse("I can't help with that.", stop_reason="refusal")],
        structured_output="native",
    )
    agent = HarnessAgent("n", model, output_type=Point)
    with pytest.raises(OutputRefusedError, match="can't help") as e:
        await agent.call("go", CTX)
    assert e.value.refusal == "I can't help with that."
    assert len(model.requests) == 1  # a refusal is not asked again


async def test_a_final_call_together_with_other_calls_is_not_taken() -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall("lookup", {"key": "a"}),
                    ScriptedToolCall(FINAL_TOOL, {"x": 1, "y": 1}),
                ]
            ),
            final(x=2, y=3),
        ]
    )
    agent = HarnessAgent("t", model, tools=[lookup], output_type=Point)
    result = await agent.call("go", CTX)
    assert result.output == Point(2, 3)
    results = {r.name: r for m in model.requests[1].messages for r in m.tool_results}
    assert results["lookup"].content == "value of a"
    assert results[FINAL_TOOL].is_error and "on its own" in results[FINAL_TOOL].content


def test_output_types_without_a_schema_fail_at_construction() -> None:
    with pytest.raises(TypeError, match="output_type"):
        HarnessAgent("t", ScriptedModel([]), output_type=object())
    with pytest.raises(ValueError, match="retries"):
        OutputSpec(Point, retries=-1)
