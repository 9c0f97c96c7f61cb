"""ScriptedModel: a real, public test model that answers from a script.

Like an HTTP library's mock transport, it lets tests and demos drive the whole agent loop
without a provider: it streams scripted text, thinking and tool calls through the ordinary
:class:`~harnessed.models.base.Model` protocol, records every request it received, can report a
context window, and can raise a provider-style context-length error when a request is larger
than a given number of tokens.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from harnessed.messages import ContentBlock, Msg, TextBlock, ThinkingBlock, ToolUseBlock, new_id
from harnessed.models.base import (
    ModelEvent,
    ModelRequest,
    ModelResponse,
    StructuredOutput,
    TextDelta,
    ThinkingDelta,
    ToolCallReady,
    ToolSchema,
    Usage,
)
from harnessed.models.errors import ContextOverflowError, ModelError
from harnessed.tokens import TokenEstimator, default_estimator

__all__ = ["ScriptItem", "ScriptedModel", "ScriptedResponse", "ScriptedToolCall"]


@dataclass(frozen=True, slots=True)
class ScriptedToolCall:
    """A tool call the scripted model will make. The id is generated when not given."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ScriptedResponse:
    """One scripted answer: optional thinking, text and tool calls."""

    text: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    thinking: str | None = None
    usage: Usage | None = None
    """Reported usage; when ``None`` the model reports its own estimate."""
    stop_reason: str | None = None

    def __init__(
        self,
        text: str = "",
        tool_calls: Iterable[ScriptedToolCall] = (),
        thinking: str | None = None,
        usage: Usage | None = None,
        stop_reason: str | None = None,
    ) -> None:
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "tool_calls", tuple(tool_calls))
        object.__setattr__(self, "thinking", thinking)
        object.__setattr__(self, "usage", usage)
        object.__setattr__(self, "stop_reason", stop_reason)


_MEMO_SIZE = 4096

ScriptItem: TypeAlias = "str | ScriptedResponse | Msg | BaseException"
Responder: TypeAlias = Callable[[ModelRequest], "ScriptItem | Awaitable[ScriptItem]"]


class ScriptedModel:
    """A model that replies with the next item of its script.

    Script items: a string (a plain text reply), a :class:`ScriptedResponse`, an assistant
    :class:`Msg`, or an exception instance (raised for that request). When the script runs out,
    ``responder`` (a function of the request, sync or async) answers; without one the model
    raises :class:`ModelError`.

    ``overflow_at_tokens`` makes the model raise :class:`ContextOverflowError` with a
    provider-style message for any request whose estimated size (messages plus tool schemas)
    exceeds it, before consuming a script item.
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        name: str = "scripted",
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        overflow_at_tokens: int | None = None,
        responder: Responder | None = None,
        delay: float = 0.0,
        chunk_size: int = 12,
        estimator: TokenEstimator | None = None,
        structured_output: StructuredOutput = "tool",
    ) -> None:
        if context_window is not None and context_window <= 0:
            raise ValueError("ScriptedModel.context_window must be positive")
        if overflow_at_tokens is not None and overflow_at_tokens <= 0:
            raise ValueError("ScriptedModel.overflow_at_tokens must be positive")
        if chunk_size <= 0:
            raise ValueError("ScriptedModel.chunk_size must be positive")
        if delay < 0:
            raise ValueError("ScriptedModel.delay must not be negative")
        if structured_output not in ("tool", "native"):
            raise ValueError(
                f"ScriptedModel.structured_output must be 'tool' or 'native', got "
                f"{structured_output!r}"
            )
        self.structured_output: StructuredOutput = structured_output
        """``native``: typed answers come as JSON text (the script writes it); ``tool``: the
        script calls ``final_result``."""
        self._name = name
        self._context_window = context_window
        self._max_output_tokens = max_output_tokens
        self.overflow_at_tokens = overflow_at_tokens
        self.responder = responder
        self.delay = delay
        self.chunk_size = chunk_size
        self.estimator = estimator or default_estimator()
        self.script: list[ScriptItem] = list(script)
        self.requests: list[ModelRequest] = []
        """Every request received, in order (including ones that raised)."""
        self._sizes: dict[int, tuple[object, int]] = {}
        """Token counts of messages and tool schemas seen before, by identity (both are
        immutable, and the agent sends the same objects again): a served scripted model
        costs what a remote one does, not a recount of the whole request each time."""

    @property
    def name(self) -> str:
        return self._name

    @property
    def context_window(self) -> int | None:
        return self._context_window

    @property
    def max_output_tokens(self) -> int | None:
        return self._max_output_tokens

    def add(self, *items: ScriptItem) -> None:
        """Append items to the script."""
        self.script.extend(items)

    @property
    def remaining(self) -> int:
        return len(self.script)

    def estimate(self, request: ModelRequest) -> int:
        """The estimated input size of ``request`` in tokens (messages, tool schemas and a
        native output schema)."""
        total = sum(map(self._size, request.messages)) + sum(map(self._size, request.tools))
        if request.output is not None:  # sent with the request like a tool's schema
            out = request.output
            total += self.estimator.count_text(f"{out.name} {out.description}")
            total += self.estimator.count_text(str(dict(out.schema)))
        return total

    def _size(self, item: Msg | ToolSchema) -> int:
        known = self._sizes.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        if isinstance(item, Msg):
            size = self.estimator.count_message(item)
        else:
            size = self.estimator.count_text(f"{item.name} {item.description}")
            size += self.estimator.count_text(str(dict(item.parameters)))
        if len(self._sizes) >= _MEMO_SIZE:
            self._sizes.clear()
        self._sizes[id(item)] = (item, size)
        return size

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        input_tokens = self.estimate(request)
        if self.overflow_at_tokens is not None and input_tokens > self.overflow_at_tokens:
            raise ContextOverflowError(
                f"This model's maximum context length is {self.overflow_at_tokens} tokens. "
                f"However, your messages resulted in {input_tokens} tokens. Please reduce the "
                "length of the messages. (code: context_length_exceeded)",
                provider="scripted",
            )
        item = await self._next(request)
        if isinstance(item, BaseException):
            raise item
        message, reported, stop = _as_message(item)
        if self.delay:
            await asyncio.sleep(self.delay)
        for block in message.content:
            if isinstance(block, ThinkingBlock):
                for piece in _chunks(block.thinking, self.chunk_size):
                    yield ThinkingDelta(piece)
            elif isinstance(block, TextBlock):
                for piece in _chunks(block.text, self.chunk_size):
                    yield TextDelta(piece)
        for call in message.tool_uses:
            yield ToolCallReady(call)
        usage = reported or Usage(
            input_tokens=input_tokens,
            output_tokens=self.estimator.count_message(message),
        )
        stop_reason = stop or ("tool_use" if message.tool_uses else "end_turn")
        yield ModelResponse(message=message, usage=usage, stop_reason=stop_reason, model=self.name)

    async def _next(self, request: ModelRequest) -> ScriptItem:
        if self.script:
            return self.script.pop(0)
        if self.responder is None:
            raise ModelError(
                f"ScriptedModel {self.name!r} has no scripted response left "
                f"(request #{len(self.requests)}); add items or give a responder",
                provider="scripted",
            )
        answer = self.responder(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer


def _as_message(item: ScriptItem) -> tuple[Msg, Usage | None, str | None]:
    if isinstance(item, str):
        return Msg.assistant(item), None, None
    if isinstance(item, Msg):
        if item.role != "assistant":
            raise ValueError(f"scripted Msg must have role 'assistant', got {item.role!r}")
        return item, None, None
    if isinstance(item, ScriptedResponse):
        blocks: list[ContentBlock] = []
        if item.thinking:
            blocks.append(ThinkingBlock(item.thinking))
        if item.text:
            blocks.append(TextBlock(item.text))
        for call in item.tool_calls:
            blocks.append(ToolUseBlock(call.id or new_id("call_"), call.name, dict(call.arguments)))
        return Msg.assistant(blocks), item.usage, item.stop_reason
    raise TypeError(f"unsupported script item {item!r}")


def _chunks(text: str, size: int) -> Iterable[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]
