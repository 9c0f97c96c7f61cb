"""Reading what a chat-completions server answered: chunk streams, whole completions, and
bodies that are neither.

:class:`StreamState` gathers the chunks of one streamed completion (or takes a whole one) into
model events. The other helpers turn an answer that is not the wire format (an empty or
truncated body, an HTML page, a JSON error sent with a 200, a stream cut mid-answer) into the
:class:`~harnessed.models.errors.ModelError` that says what it was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harnessed.messages import (
    INVALID_ARGUMENTS_KEY,
    ContentBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    clean_text,
    new_id,
)
from harnessed.models.base import (
    ModelEvent,
    ModelResponse,
    TextDelta,
    ThinkingDelta,
    ToolCallReady,
    Usage,
)
from harnessed.models.errors import ModelError
from harnessed.models.retry import error_from_status
from harnessed.models.wire import (
    BodyTap,
    body_says_nothing,
    broken,
    content_type,
    error_body,
    malformed,
    origin,
)

if TYPE_CHECKING:
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall

__all__ = [
    "NOT_AGAIN",
    "STREAM_HEAD",
    "WHOLE_BODY",
    "StreamState",
    "completion_events",
    "cut_stream",
    "malformed_stream",
    "says_nothing",
    "unstreamed_answer",
]

_PROVIDER = "openai"

NOT_AGAIN = "; not asked again, as that would repeat what was shown"
STREAM_HEAD = 4096
"""Bytes of an event stream kept to describe it should it turn out not to be one."""
WHOLE_BODY = 4 << 20
"""Bytes kept of a streamed request's body that is not an event stream (a server that
ignored ``stream`` answers with the whole completion as JSON)."""


def says_nothing(tap: BodyTap) -> bool:
    return tap.received == 0 or body_says_nothing(tap.head)


def malformed_stream(response: Any, what: str, tap: BodyTap | None) -> ModelError:
    return malformed(_PROVIDER, response, what, tap)


def cut_stream(response: Any, exc: Exception, shown: int, timeout: float) -> ModelError:
    """The error for a connection lost while the answer was streaming."""
    import openai

    cause = exc.__cause__ or exc
    if isinstance(exc, openai.APITimeoutError):
        what = f"the server sent nothing for {timeout:g} s in the middle of the stream"
    else:
        what = f"the stream was cut: the connection was lost mid-answer ({cause!r})"
    if shown:
        what += f" after {shown} characters of the answer had been shown{NOT_AGAIN}"
    return broken(_PROVIDER, response, what)


def unstreamed_answer(response: Any, tap: BodyTap) -> list[ModelEvent]:
    """A streamed request answered with a whole body that is not an event stream: the
    completion it holds, the error it states, or an error saying what it was."""
    if content_type(response) == "text/event-stream" or tap.received > len(tap.head):
        raise malformed_stream(
            response, "the server answered the streamed request with no chunk it could read", tap
        )
    return completion_events(response, tap.head, streamed=True)


def completion_events(response: Any, body: bytes, *, streamed: bool = False) -> list[ModelEvent]:
    """The events of a non-streamed completion body, or the error it states or is."""
    from openai.types.chat import ChatCompletion

    asked = "the streamed request" if streamed else "the request"
    if not body.strip():
        raise malformed(_PROVIDER, response, f"the server answered {asked} with an empty body")
    stated = error_body(body)
    if stated is not None:
        kind, message = stated
        text = f"{kind}: {message}" if kind else message
        raise error_from_status(None, f"{text} ({origin(response)})", provider=_PROVIDER)
    try:
        data = json.loads(body)
    except ValueError:
        raise malformed(
            _PROVIDER, response, f"the server answered {asked} with a body that is not JSON", body
        ) from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        raise malformed(
            _PROVIDER, response, f"the server answered {asked} with JSON that holds no choice", body
        )
    try:
        return StreamState.of_completion(ChatCompletion.construct(**data)).finish()
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
        raise malformed(
            _PROVIDER, response, f"the completion the server sent is malformed ({exc})", body
        ) from exc


@dataclass
class _PendingCall:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamState:
    """Accumulates the chunks of one streamed completion."""

    received: bool = False
    received_deltas: bool = False
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None
    refusal: list[str] = field(default_factory=list)
    """What the model said instead of a structured answer it refused to give."""

    def feed(self, chunk: ChatCompletionChunk) -> list[ModelEvent]:
        """Take in one chunk and return the deltas it carries."""
        self.received = True
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        events: list[ModelEvent] = []
        for choice in chunk.choices or ():
            if choice.index:  # only the first choice is requested
                continue
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
            delta = choice.delta
            if delta is None:
                continue
            reasoning = _reasoning_of(delta.model_extra)
            if reasoning:
                self.thinking.append(reasoning)
                events.append(ThinkingDelta(reasoning))
            if delta.content:
                self.received_deltas = True
                self.text.append(delta.content)
                events.append(TextDelta(delta.content))
            if getattr(delta, "refusal", None):
                self.refusal.append(str(delta.refusal))
            for fragment in delta.tool_calls or ():
                self._add_fragment(fragment)
        return events

    @classmethod
    def of_completion(cls, completion: ChatCompletion) -> StreamState:
        """The state a stream would have reached, from a non-streamed answer."""
        state = cls(received=True, model=completion.model)
        if completion.usage is not None:
            state.usage = _usage(completion.usage)
        choice = completion.choices[0]
        state.finish_reason = choice.finish_reason or "stop"
        message = choice.message
        reasoning = _reasoning_of(message.model_extra)
        if reasoning:
            state.thinking.append(reasoning)
        if message.content:
            state.text.append(message.content)
        if getattr(message, "refusal", None):
            state.refusal.append(str(message.refusal))
        for index, call in enumerate(message.tool_calls or ()):
            function = getattr(call, "function", None)
            if function is not None:
                state.calls[index] = _PendingCall(
                    call.id, function.name or "", [function.arguments or ""]
                )
        return state

    def _add_fragment(self, fragment: ChoiceDeltaToolCall) -> None:
        index, call_id, function = fragment.index, fragment.id, fragment.function
        if index is None:  # some servers (Gemini) omit it: a new id or a new name starts a
            # new call (a call's later fragments repeat neither; two calls may share an id)
            known = {c.id for c in self.calls.values()}
            last = self.calls[max(self.calls)] if self.calls else None
            named = function is not None and bool(function.name)
            new = (
                last is None
                or bool(call_id and call_id not in known)
                or (named and bool(last.name))
            )
            index = len(self.calls) if new else max(self.calls)
        pending = self.calls.setdefault(index, _PendingCall())
        if call_id and not pending.id:
            pending.id = call_id
        if function is not None:
            if function.name and not pending.name:
                pending.name = function.name
            if function.arguments:
                pending.arguments.append(function.arguments)

    def finish(self) -> list[ModelEvent]:
        """The tool calls, in index order, followed by the final response."""
        calls = [
            ToolUseBlock(
                p.id or new_id("call_"), p.name, _parse_arguments(clean_text("".join(p.arguments)))
            )
            for _, p in sorted(self.calls.items())
        ]
        blocks: list[ContentBlock] = []
        if self.thinking:
            blocks.append(ThinkingBlock(clean_text("".join(self.thinking))))
        if self.text:
            blocks.append(TextBlock(clean_text("".join(self.text))))
        blocks.extend(calls)
        metadata: dict[str, Any] = {}
        stop = self.finish_reason
        if self.refusal:  # a refused structured answer: the reason is the reply's text
            refusal = clean_text("".join(self.refusal))
            metadata["refusal"], stop = refusal, "refusal"
            if not self.text:
                blocks.insert(len(blocks) - len(calls), TextBlock(refusal))
        message = Msg.assistant(blocks, metadata=metadata)
        final = ModelResponse(message, self.usage, stop, self.model)
        text: list[ModelEvent] = []
        if not self.received_deltas and self.text:
            text.append(TextDelta("".join(self.text)))
        return [*text, *(ToolCallReady(call) for call in calls), final]


def _usage(usage: CompletionUsage) -> Usage:
    details = usage.prompt_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=(details.cached_tokens or 0) if details else 0,
        cache_write_tokens=(details.cache_write_tokens or 0) if details else 0,
    )


def _reasoning_of(extra: Mapping[str, Any] | None) -> str | None:
    """Reasoning text that DeepSeek / vLLM / others put beside ``content`` in a delta."""
    values = [(extra or {}).get(key) for key in ("reasoning_content", "reasoning")]
    return next((v for v in values if isinstance(v, str) and v), None)


def _parse_arguments(raw: str) -> dict[str, Any]:
    """Decode tool-call arguments; anything but a JSON object is kept raw for the toolkit."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {INVALID_ARGUMENTS_KEY: raw}
