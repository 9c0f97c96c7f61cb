"""The AG-UI protocol as a second stream format of the HTTP channel (``ag-ui-protocol``; the
``ag-ui`` extra), so AG-UI front ends (CopilotKit and others) connect unchanged.

``POST /v1/ag-ui`` takes a ``RunAgentInput``: its ``threadId`` is the session id (the caller's
own, as on every route: bearer token → user), the last user message the turn's input, its
``runId`` the turn's idempotency key (a retried run is the same turn). The turn's events are
streamed as AG-UI events: ``RUN_STARTED``; text as ``TEXT_MESSAGE_*``; thinking as
``REASONING_*``; each model request a step; tool calls as ``TOOL_CALL_START/ARGS/END`` and
their results as ``TOOL_CALL_RESULT``; harness events as ``CUSTOM``; the end as
``RUN_FINISHED`` (``RUN_ERROR`` for a failure). A tool call waiting for approval ends the run
with an ``interrupt`` outcome naming each request; the next run answers it with ``resume``
entries (``status: "resolved"`` and ``payload: {"approved": true|false, "feedback"?: ...}``;
``"cancelled"`` declines) and streams the rest of the same turn.
"""

import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Annotated, Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.core.events import (
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
)
from ag_ui.encoder import EventEncoder
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from harnessed import events as ev
from harnessed.gateway.gateway import Gateway, UnknownAgentError
from harnessed.gateway.identity import check_session_id
from harnessed.messages import new_id
from harnessed.permissions import ConfirmationError
from harnessed.sessions import AgentSession, IdempotencyConflictError, NothingToResumeError, Turn

__all__ = ["ANSWER_SCHEMA", "AguiTranslator", "add_ag_ui_route", "ag_ui_stream"]

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "feedback": {"type": "string"}},
    "required": ["approved"],
}
"""What a resume entry's ``payload`` for a tool approval looks like."""


def _ms() -> int:
    return int(time.time() * 1000)


class AguiTranslator:
    """harnessed events → AG-UI events, for one run (it keeps which message is open)."""

    def __init__(self, thread_id: str, run_id: str) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self._text: str | None = None
        self._reasoning: str | None = None
        self._step: str | None = None
        self.interrupts: list[Interrupt] = []
        self.finished = False

    def start(self) -> BaseEvent:
        return RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id, timestamp=_ms())

    def _close_text(self) -> Iterator[BaseEvent]:
        if self._text is not None:
            yield TextMessageEndEvent(message_id=self._text, timestamp=_ms())
            self._text = None
        if self._reasoning is not None:
            yield ReasoningMessageEndEvent(message_id=self._reasoning, timestamp=_ms())
            yield ReasoningEndEvent(message_id=self._reasoning, timestamp=_ms())
            self._reasoning = None

    def _close_step(self) -> Iterator[BaseEvent]:
        yield from self._close_text()
        if self._step is not None:
            yield StepFinishedEvent(step_name=self._step, timestamp=_ms())
            self._step = None

    def translate(self, event: ev.Event) -> Iterator[BaseEvent]:
        """The AG-UI events for one harnessed event."""
        if event.source is not None:  # a sub-agent's: told as a custom event, briefly
            yield from _subagent_event(event)
            return
        if isinstance(event, ev.ModelCallStartEvent):
            yield from self._close_step()
            self._step = f"model_call:{event.iteration}"
            yield StepStartedEvent(step_name=self._step, timestamp=_ms())
        elif isinstance(event, ev.TextDeltaEvent):
            yield from self._text_delta(event)
        elif isinstance(event, ev.ThinkingDeltaEvent):
            yield from self._thinking_delta(event)
        elif isinstance(event, ev.ModelCallEndEvent):
            yield from self._close_step()
        elif isinstance(event, ev.ToolCallEvent):
            yield from self._close_text()
            yield from _tool_call(event)
        elif isinstance(event, ev.ToolResultEvent):
            result = event.result
            yield ToolCallResultEvent(
                message_id=new_id("msg_"),
                tool_call_id=result.tool_use_id,
                content=result.content,
                role="tool",
                timestamp=_ms(),
            )
        elif isinstance(event, ev.ConfirmationRequestEvent):
            self.interrupts.append(_approval_interrupt(event))
        elif isinstance(event, ev.CustomEvent):
            yield CustomEvent(name=event.name, value=dict(event.data), timestamp=_ms())
        elif isinstance(event, ev.MaxItersEvent):
            yield CustomEvent(
                name="max_iters", value={"max_iters": event.max_iters}, timestamp=_ms()
            )
        elif isinstance(event, ev.ErrorEvent):
            yield from self._close_step()
            self.finished = True
            yield RunErrorEvent(message=event.message, code=event.error_type, timestamp=_ms())
        elif isinstance(event, ev.AgentEndEvent):
            yield from self._agent_end(event)

    def _text_delta(self, event: ev.TextDeltaEvent) -> Iterator[BaseEvent]:
        """A piece of the reply's text: ends the reasoning, opens the text message once."""
        if self._reasoning is not None:
            yield from self._close_text()
        if self._text is None:
            self._text = event.model_call_id
            yield TextMessageStartEvent(message_id=self._text, role="assistant", timestamp=_ms())
        yield TextMessageContentEvent(message_id=self._text, delta=event.text, timestamp=_ms())

    def _thinking_delta(self, event: ev.ThinkingDeltaEvent) -> Iterator[BaseEvent]:
        """A piece of the model's reasoning: ends the text, opens the reasoning message once."""
        if self._reasoning is None:
            yield from self._close_text()
            self._reasoning = "reasoning_" + event.model_call_id
            yield ReasoningStartEvent(message_id=self._reasoning, timestamp=_ms())
            yield ReasoningMessageStartEvent(
                message_id=self._reasoning, role="reasoning", timestamp=_ms()
            )
        yield ReasoningMessageContentEvent(
            message_id=self._reasoning, delta=event.thinking, timestamp=_ms()
        )

    def _agent_end(self, event: ev.AgentEndEvent) -> Iterator[BaseEvent]:
        """The turn's end: the run finishes, cancelled if the turn was cut short."""
        yield from self._close_step()
        self.finished = True
        outcome: Any
        if event.status in ("interrupted", "stopped", "cancelled"):
            outcome = RunFinishedCancelledOutcome()
        else:
            outcome = RunFinishedSuccessOutcome()
        yield RunFinishedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            result={"text": event.reply.text, "status": event.status},
            outcome=outcome,
            timestamp=_ms(),
        )

    def pause(self) -> Iterator[BaseEvent]:
        """End the run waiting for the approvals collected (the turn waits on)."""
        yield from self._close_step()
        self.finished = True
        yield RunFinishedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            outcome=RunFinishedInterruptOutcome(interrupts=self.interrupts),
            timestamp=_ms(),
        )


async def ag_ui_stream(
    turn: Turn,
    thread_id: str,
    run_id: str,
    *,
    after: int = 0,
    keepalive: float = 15.0,
) -> AsyncIterator[bytes]:
    """The AG-UI SSE frames of ``turn`` (its events from index ``after`` on), until it ends
    or waits for approvals."""
    encoder = EventEncoder()
    translate = AguiTranslator(thread_id, run_id)
    yield encoder.encode(translate.start()).encode()
    seen = 0
    async for batch in turn.batches(keepalive):
        if not batch:
            yield b": keep-alive\n\n"
            continue
        frames: list[str] = []
        for event in batch:
            seen += 1
            if seen <= after:
                continue
            frames.extend(encoder.encode(e) for e in translate.translate(event))
        if translate.interrupts and not translate.finished:
            frames.extend(encoder.encode(e) for e in translate.pause())
        if frames:
            yield "".join(frames).encode()
        if translate.finished:
            return
    if not translate.finished:
        error = turn.error
        failed = RunErrorEvent(
            message=str(error) if error else "the turn ended without a result",
            code=type(error).__name__ if error else "RuntimeError",
        )
        yield encoder.encode(failed).encode()


def _subagent_event(event: ev.Event) -> Iterator[BaseEvent]:
    """A sub-agent's start, end or custom event, told briefly as one custom event."""
    if isinstance(event, ev.AgentStartEvent | ev.AgentEndEvent | ev.CustomEvent):
        value: dict[str, Any] = {"source": event.source, "type": event.type}
        if isinstance(event, ev.AgentEndEvent):
            value["status"] = event.status
        if isinstance(event, ev.CustomEvent):
            value["name"] = event.name
        yield CustomEvent(name="harnessed.subagent", value=value, timestamp=_ms())


def _tool_call(event: ev.ToolCallEvent) -> Iterator[BaseEvent]:
    """A whole tool call: its start, its arguments in one piece and its end."""
    call = event.call
    yield ToolCallStartEvent(
        tool_call_id=call.id,
        tool_call_name=call.name,
        parent_message_id=event.model_call_id,
        timestamp=_ms(),
    )
    yield ToolCallArgsEvent(
        tool_call_id=call.id, delta=json.dumps(dict(call.input)), timestamp=_ms()
    )
    yield ToolCallEndEvent(tool_call_id=call.id, timestamp=_ms())


def _approval_interrupt(event: ev.ConfirmationRequestEvent) -> Interrupt:
    """The AG-UI interrupt asking for the approval of a tool call."""
    return Interrupt(
        id=event.request_id,
        reason="tool_approval",
        message=event.reason,
        tool_call_id=event.call.id,
        response_schema=ANSWER_SCHEMA,
        metadata={"tool": event.call.name, "arguments": dict(event.call.input)},
    )


def _last_user_text(run: RunAgentInput) -> str | None:
    for message in reversed(run.messages):
        if getattr(message, "role", None) == "user":
            content = message.content
            if isinstance(content, str):
                return content
            if not isinstance(content, list):
                return None
            parts = [getattr(p, "text", "") for p in content]
            return "".join(p for p in parts if isinstance(p, str)) or None
    return None


def add_ag_ui_route(
    app: FastAPI,
    gateway: Gateway,
    current_user: Callable[..., Any],
    keepalive: float,
) -> None:
    """Add ``POST /v1/ag-ui`` to the HTTP channel's app (see the module docstring)."""

    async def run(
        request: Request,
        user: Annotated[str, Depends(current_user)],
        agent: Annotated[str | None, Query(max_length=100)] = None,
    ) -> StreamingResponse:
        try:
            body = RunAgentInput.model_validate_json(await request.body())
            check_session_id(body.thread_id)
        except (ValidationError, ValueError) as exc:
            detail = (
                exc.errors(include_input=False) if isinstance(exc, ValidationError) else str(exc)
            )
            raise HTTPException(422, json.loads(json.dumps(detail, default=str))) from None
        if len(body.run_id) > 200:
            raise HTTPException(422, "runId must be at most 200 characters")
        try:
            session = gateway.session(user, body.thread_id, agent)
        except UnknownAgentError as exc:
            raise HTTPException(404, str(exc)) from None
        await gateway.open(session, channel="ag-ui")
        turn, after = await (_resume(session, body) if body.resume else _submit(session, body))
        return StreamingResponse(
            ag_ui_stream(turn, body.thread_id, body.run_id, after=after, keepalive=keepalive),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    app.add_api_route(
        "/v1/ag-ui",
        run,
        methods=["POST"],
        response_class=StreamingResponse,
        tags=["ag-ui"],
        summary="Run a turn, streamed as AG-UI events",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"type": "object"}}},
                "description": "An AG-UI RunAgentInput (threadId = session id).",
            }
        },
    )


async def _submit(session: AgentSession, body: RunAgentInput) -> tuple[Turn, int]:
    text = _last_user_text(body)
    if text is None or not text.strip():
        raise HTTPException(422, "the run has no user message to answer")
    try:
        return await session.submit(text, "agui:" + body.run_id), 0
    except IdempotencyConflictError as exc:
        raise HTTPException(409, str(exc)) from None
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None


async def _resume(session: AgentSession, body: RunAgentInput) -> tuple[Turn, int]:
    answered: set[str] = set()
    for entry in body.resume or []:
        payload = entry.payload if isinstance(entry.payload, dict) else {}
        approved = entry.status == "resolved" and payload.get("approved") is True
        feedback = payload.get("feedback")
        try:
            await session.respond(
                entry.interrupt_id,
                approved,
                feedback=feedback if isinstance(feedback, str) else None,
            )
        except ConfirmationError as exc:
            raise HTTPException(409, str(exc)) from None
        answered.add(entry.interrupt_id)
    live = session.running
    if live is not None:  # the turn waited for these answers here: the rest of it
        seen = 0
        for index, event in enumerate(live.published):
            if isinstance(event, ev.ConfirmationRequestEvent) and event.request_id in answered:
                seen = index + 1
        return live, seen
    try:  # answered for a step parked elsewhere (another process, a restart)
        return await session.resume(), 0
    except NothingToResumeError as exc:
        raise HTTPException(409, str(exc)) from None
