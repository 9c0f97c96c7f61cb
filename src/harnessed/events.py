"""Typed events yielded by :meth:`HarnessAgent.stream_events`.

Every event carries ``type`` (a stable string), ``run_id``, ``session_id`` and a UTC
``timestamp``; :meth:`Event.to_dict` gives JSON-compatible data for transport or storage.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

from harnessed._internal.clock import now_iso
from harnessed.messages import Msg, ToolResultBlock, ToolUseBlock, block_to_dict
from harnessed.models.base import Usage
from harnessed.models.usage import UsageTotals

__all__ = [
    "AgentEndEvent",
    "AgentStartEvent",
    "ConfirmationRequestEvent",
    "CustomEvent",
    "ErrorEvent",
    "Event",
    "EventBase",
    "MaxItersEvent",
    "ModelCallEndEvent",
    "ModelCallStartEvent",
    "RunStatus",
    "TextDeltaEvent",
    "ThinkingDeltaEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "UsageLimitEvent",
]

RunStatus: TypeAlias = Literal[
    "completed", "max_iters", "limit", "error", "cancelled", "pending", "stopped", "interrupted"
]
"""``pending``: the call stopped to wait for the user's answer to confirmation requests;
``interrupted``: the turn was stopped at a safe point (``AgentSession.interrupt``), its progress
saved; ``limit``: a usage limit was reached (``UsageLimits``)."""


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Msg):
        return value.to_dict()
    if isinstance(value, ToolUseBlock | ToolResultBlock):
        return block_to_dict(value)
    if isinstance(value, Usage):
        return dataclasses.asdict(value)
    if isinstance(value, UsageTotals):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) or hasattr(value, "model_dump"):  # a typed output
        import pydantic_core

        try:
            return pydantic_core.to_jsonable_python(value)
        except pydantic_core.PydanticSerializationError:
            return value
    return value


@dataclass(frozen=True, kw_only=True, slots=True)
class EventBase:
    type: ClassVar[str] = "event"
    run_id: str
    session_id: str
    timestamp: str = field(default_factory=now_iso)
    source: str | None = None
    """``None`` for the agent's own events; for a sub-agent's events forwarded into its
    parent's stream, the sub-agent's path (``reviewer:1``, nested: ``reviewer:1/helper:2``)."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type}
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = _FIELD_NAMES[type(self)] = tuple(f.name for f in dataclasses.fields(self))
        for name in names:
            data[name] = _plain(getattr(self, name))
        return data


_FIELD_NAMES: dict[type[EventBase], tuple[str, ...]] = {}


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentStartEvent(EventBase):
    type: ClassVar[str] = "agent_start"
    agent: str
    user_id: str
    input: Msg | None


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentEndEvent(EventBase):
    type: ClassVar[str] = "agent_end"
    reply: Msg
    status: RunStatus
    iterations: int
    pending: tuple[str, ...] = ()
    """With status ``pending``: the confirmation requests still waiting for an answer."""
    usage: UsageTotals | None = None
    """What the call spent: its model requests and those of the sub-agents it ran."""
    turn_id: str | None = None
    output: Any = None
    """With an output type and status ``completed``: the validated answer (a value of the
    type; ``to_dict`` gives its JSON form)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelCallStartEvent(EventBase):
    type: ClassVar[str] = "model_call_start"
    model_call_id: str
    iteration: int
    model: str
    purpose: str = "reasoning"


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelCallEndEvent(EventBase):
    type: ClassVar[str] = "model_call_end"
    model_call_id: str
    message: Msg
    usage: Usage | None
    stop_reason: str | None
    cost_usd: float | None = None
    """The request's price in USD (``None``: unknown model, or no usage reported)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TextDeltaEvent(EventBase):
    type: ClassVar[str] = "text_delta"
    model_call_id: str
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ThinkingDeltaEvent(EventBase):
    type: ClassVar[str] = "thinking_delta"
    model_call_id: str
    thinking: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallEvent(EventBase):
    type: ClassVar[str] = "tool_call"
    model_call_id: str
    call: ToolUseBlock


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResultEvent(EventBase):
    type: ClassVar[str] = "tool_result"
    result: ToolResultBlock
    duration_ms: float


@dataclass(frozen=True, kw_only=True, slots=True)
class CustomEvent(EventBase):
    """An application, tool or harness event such as ``context_build``."""

    type: ClassVar[str] = "custom"
    name: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class ConfirmationRequestEvent(EventBase):
    """A tool call waits for the user's approval: answer with ``agent.respond``.

    ``reason`` says why approval is needed; ``details`` carries extra data for the
    confirmation UI (for ``plan_exit``: the plan file and its text).
    """

    type: ClassVar[str] = "confirmation_request"
    request_id: str
    call: ToolUseBlock
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class MaxItersEvent(EventBase):
    """The loop stopped because it reached ``max_iters`` model requests."""

    type: ClassVar[str] = "max_iters"
    max_iters: int


@dataclass(frozen=True, kw_only=True, slots=True)
class UsageLimitEvent(EventBase):
    """The loop stopped because a usage limit was reached (see ``UsageLimits``)."""

    type: ClassVar[str] = "usage_limit"
    limit: str
    """``requests``, ``input_tokens``, ``output_tokens`` or ``cost_usd``."""
    scope: str
    """``call``, ``session``, or ``parent`` (the call of the agent that delegated this one)."""
    used: float
    maximum: float


@dataclass(frozen=True, kw_only=True, slots=True)
class ErrorEvent(EventBase):
    """The run failed; the exception is raised to the caller right after this event."""

    type: ClassVar[str] = "error"
    error_type: str
    message: str


Event: TypeAlias = (
    AgentStartEvent
    | AgentEndEvent
    | ModelCallStartEvent
    | ModelCallEndEvent
    | TextDeltaEvent
    | ThinkingDeltaEvent
    | ToolCallEvent
    | ToolResultEvent
    | CustomEvent
    | ConfirmationRequestEvent
    | MaxItersEvent
    | UsageLimitEvent
    | ErrorEvent
)
