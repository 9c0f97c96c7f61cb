"""The model protocol: what harnessed asks of an LLM provider.

A model receives a :class:`ModelRequest` (messages, tool schemas, output limit, purpose) and
streams :class:`ModelEvent`\\ s: text and thinking deltas, finished tool calls, and exactly one
final :class:`ModelResponse` holding the assembled assistant :class:`~harnessed.messages.Msg`
and the provider-reported :class:`Usage`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from harnessed.messages import Msg, ToolUseBlock

__all__ = [
    "Model",
    "ModelEvent",
    "ModelRequest",
    "ModelResponse",
    "OutputFormat",
    "Purpose",
    "RetryNotice",
    "StructuredOutput",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallReady",
    "ToolSchema",
    "USAGE_KEY",
    "Usage",
    "collect",
    "structured_output_of",
]

Purpose: TypeAlias = Literal["reasoning", "summary"]

StructuredOutput: TypeAlias = Literal["native", "tool"]
"""How a model produces a typed final answer: ``native`` (the provider constrains its text to
a JSON schema, see :class:`OutputFormat`) or ``tool`` (the model calls a final-answer tool)."""


def structured_output_of(model: object) -> StructuredOutput:
    """What ``model`` says it supports (its ``structured_output`` attribute; else ``tool``)."""
    return "native" if getattr(model, "structured_output", "tool") == "native" else "tool"


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """A tool as the model sees it: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
        }


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """The final answer must be a JSON document matching ``schema`` (native structured output:
    OpenAI's ``response_format``, Anthropic's ``output_config``)."""

    name: str
    schema: Mapping[str, Any]
    strict: bool = True
    """The schema follows the strict subset (every property required, no extra properties)."""
    description: str = ""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything sent to the model for one request.

    ``messages`` may start with one ``system`` message; providers that take the system prompt
    separately (Anthropic) lift it out.
    """

    messages: tuple[Msg, ...]
    tools: tuple[ToolSchema, ...] = ()
    max_output_tokens: int | None = None
    purpose: Purpose = "reasoning"
    call_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    cache_key: str | None = None
    """A stable, opaque id of the conversation (the same for every request of a session), for
    providers that route requests sharing a prompt prefix to the same cache (OpenAI's
    ``prompt_cache_key``)."""
    cache_points: tuple[int, ...] = ()
    """Where the request's prefix is worth caching, as message counts from the start
    (ascending): the last is the end of the part the next request will repeat (the system
    message and the history, before transient state and references); an earlier one is where
    the prefix shared with the previous request ends. Adapters with explicit cache markers
    (Anthropic's ``cache_control``) place them there."""
    output: OutputFormat | None = None
    """Native structured output for the final answer (``None``: free text)."""

    def __post_init__(self) -> None:
        if self.max_output_tokens is not None and self.max_output_tokens <= 0:
            raise ValueError("ModelRequest.max_output_tokens must be positive")
        points = self.cache_points
        if any(not 0 < p <= len(self.messages) for p in points) or list(points) != sorted(
            set(points)
        ):
            raise ValueError(
                "ModelRequest.cache_points must be ascending message counts within "
                f"1..{len(self.messages)}, got {points!r}"
            )
        names = [t.name for t in self.tools]
        if len(names) != len(set(names)):
            raise ValueError(f"ModelRequest.tools has duplicate names: {names}")


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage reported by the provider for one request."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @classmethod
    def from_dict(cls, data: object) -> Usage | None:
        """Usage from ``dataclasses.asdict`` data (an answer's ``metadata[USAGE_KEY]``);
        ``None`` for anything else."""
        if not isinstance(data, Mapping):
            return None
        counts: dict[str, int] = {}
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            value = data.get(name, 0)
            if isinstance(value, bool) or not isinstance(value, int):
                return None
            counts[name] = value
        return cls(**counts)


USAGE_KEY = "usage"
"""Metadata key of an assistant message: the usage its provider reported for the request that
produced it (kept in the session log with the message)."""


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    thinking: str
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True, slots=True)
class ToolCallReady:
    """A tool call whose arguments have been received completely."""

    call: ToolUseBlock
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The final event of a stream: the whole assistant message and its usage."""

    message: Msg
    usage: Usage | None = None
    stop_reason: str | None = None
    model: str | None = None
    type: Literal["response"] = "response"


@dataclass(frozen=True, slots=True)
class RetryNotice:
    """A request failed in a way worth retrying; the model waits ``wait`` seconds and sends it
    again as attempt ``attempt + 1`` of ``max_attempts``. Only ever before the first delta."""

    attempt: int
    max_attempts: int
    wait: float
    error: str
    status_code: int | None = None
    type: Literal["retry"] = "retry"


ModelEvent: TypeAlias = TextDelta | ThinkingDelta | ToolCallReady | ModelResponse | RetryNotice


@runtime_checkable
class Model(Protocol):
    """An LLM that streams a response to a :class:`ModelRequest`.

    Implementations raise :class:`~harnessed.models.errors.ModelError` subclasses
    (``ContextOverflowError``, ``RateLimitError``) for provider failures, and end every
    successful stream with exactly one :class:`ModelResponse`.
    """

    @property
    def name(self) -> str:
        """The model identifier sent to the provider."""
        ...

    @property
    def context_window(self) -> int | None:
        """The model's context window in tokens, or ``None`` when unknown."""
        ...

    @property
    def max_output_tokens(self) -> int | None:
        """The default limit on generated tokens, or ``None`` for the provider default."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream the response to ``request``."""
        ...


async def collect(model: Model, request: ModelRequest) -> ModelResponse:
    """Run ``request`` to completion and return the final response (deltas are dropped)."""
    final: ModelResponse | None = None
    async for event in model.stream(request):
        if isinstance(event, ModelResponse):
            final = event
    if final is None:
        from harnessed.models.errors import ModelError

        raise ModelError(f"model {model.name!r} ended its stream without a response")
    return final
