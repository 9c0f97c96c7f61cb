"""ask_user: the model asks, the turn parks like a confirmation, respond(answer=...) answers
(checked against choices or a schema), the model reads the answer; logged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.events import AgentEndEvent, ConfirmationRequestEvent, Event
from harnessed.log import RecordType
from harnessed.models import ModelRequest, ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.permissions import ConfirmationError
from harnessed.questions import ASK_USER, AskUser, QuestionAnswerError

CTX = RuntimeContext("u", "q")

SCHEMA = {
    "type": "object",
    "properties": {"region": {"type": "string"}, "replicas": {"type": "integer", "minimum": 1}},
    "required": ["region", "replicas"],
    "additionalProperties": False,
}


def ask(**args: Any) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(ASK_USER, args, id="q1")])


def answer_seen(request: ModelRequest) -> str:
    return next(r.content for m in request.messages for r in m.tool_results)


def agent_with(model: ScriptedModel, **kw: Any) -> HarnessAgent:
    return HarnessAgent("asker", model, capabilities=[AskUser()], **kw)


async def test_a_question_parks_the_call_and_the_answer_reaches_the_model() -> None:
    model = ScriptedModel([ask(question="Which region?", choices=["eu", "us"]), "Deploying to eu."])
    agent = agent_with(model)
    first = await agent.call("deploy the app", CTX)
    assert first.status == "pending" and len(first.pending) == 1
    (pending,) = await agent.pending_confirmations(CTX)
    assert pending.reason == "Which region?"
    assert pending.details == {
        "kind": "question",
        "question": "Which region?",
        "choices": ["eu", "us"],
        "schema": None,
    }
    with pytest.raises(QuestionAnswerError, match="one of 'eu', 'us'"):
        await agent.respond(CTX, pending.request_id, True, answer="asia")
    with pytest.raises(QuestionAnswerError, match="pass answer="):
        await agent.respond(CTX, pending.request_id, True)
    await agent.respond(CTX, pending.request_id, True, answer="eu")
    done = await agent.call(None, CTX)
    assert done.status == "completed" and done.text == "Deploying to eu."
    assert answer_seen(model.requests[1]) == "The user answered: eu"
    answered = [
        r.payload
        for r in await agent.session_log(CTX, types=[RecordType.PERMISSION_CHANGED])
        if r.payload.get("action") == "answered"
    ]
    assert [json.loads(a["feedback"]) for a in answered] == ["eu"]


async def test_a_schema_answer_is_validated_and_given_to_the_model_as_json() -> None:
    model = ScriptedModel([ask(question="Where and how many?", schema=SCHEMA), "ok"])
    agent = agent_with(model)
    events: list[Event] = []
    async for event in agent.stream_events("scale it", CTX):  # waits for the answer
        events.append(event)
        if isinstance(event, ConfirmationRequestEvent):
            assert event.details["kind"] == "question"
            with pytest.raises(QuestionAnswerError, match="replicas"):
                await agent.respond(CTX, event.request_id, True, answer={"region": "eu"})
            with pytest.raises(QuestionAnswerError, match="less than the minimum"):
                await agent.respond(
                    CTX, event.request_id, True, answer={"region": "eu", "replicas": 0}
                )
            await agent.respond(CTX, event.request_id, True, answer={"region": "eu", "replicas": 3})
    assert isinstance(events[-1], AgentEndEvent) and events[-1].status == "completed"
    seen = answer_seen(model.requests[1])
    assert seen.startswith("The user answered (JSON):")
    assert json.loads(seen.split(":", 1)[1]) == {"region": "eu", "replicas": 3}


async def test_a_declined_question_tells_the_model_and_bad_questions_are_refused() -> None:
    model = ScriptedModel(
        [
            ask(question="Which region?"),
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall(ASK_USER, {"question": "Shape?", "schema": {"type": 5}})
                ]
            ),
            "fine",
        ]
    )
    agent = agent_with(model)
    first = await agent.call("go", CTX)
    await agent.respond(CTX, first.pending[0], False)
    done = await agent.call(None, CTX)
    assert done.text == "fine"
    declined = answer_seen(model.requests[1])
    assert "chose not to answer" in declined
    refused = [r for m in model.requests[2].messages for r in m.tool_results][-1]
    assert refused.is_error and "not a valid JSON schema" in refused.content


async def test_answer_is_only_for_questions() -> None:
    from harnessed import tool

    @tool
    async def deploy(target: str) -> str:
        """Deploy."""
        return "deployed"

    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("deploy", {"target": "x"})])]
    )
    agent = agent_with(model, tools=[deploy], permission_mode="default")
    result = await agent.call("go", CTX)
    with pytest.raises(ConfirmationError, match="only for questions"):
        await agent.respond(CTX, result.pending[0], True, answer="yes")


async def test_a_session_running_unattended_refuses_questions() -> None:
    model = ScriptedModel([ask(question="Which region?"), "went on"])
    agent = agent_with(model, permission_mode="dont_ask")
    result = await agent.call("go", CTX)
    assert result.status == "completed"
    assert "dont_ask" in answer_seen(model.requests[1])
