"""Anthropic Messages API adapter built on the official ``anthropic`` SDK.

The SDK is an optional extra and slow to import, so this module only touches it inside
:class:`AnthropicModel`'s constructor; importing ``harnessed`` or ``harnessed.models`` never
loads it. The adapter turns harnessed messages into Messages-API requests (system prompt lifted
out, tool results folded into user turns, same-role turns merged so roles alternate) and turns the
raw server-sent event stream back into :class:`~harnessed.models.base.ModelEvent`\\ s.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from harnessed.messages import (
    INVALID_ARGUMENTS_KEY,
    ContentBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    clean_text,
)
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
from harnessed.models.clients import PerLoop, close_client, keep_open
from harnessed.models.errors import ContextOverflowError, ModelError
from harnessed.models.retry import RetryPolicy, error_from_status, retrying_stream
from harnessed.models.sanitize import sanitize
from harnessed.models.windows import WindowKnowledge, WindowSource
from harnessed.models.wire import (
    BodyTap,
    body_says_nothing,
    broken,
    content_type,
    error_body,
    malformed,
    origin,
    retire,
    shown_chars,
    silent_server,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["AnthropicModel"]

_PROVIDER = "anthropic"
_MIN_BUDGET = 1024  # the API's smallest thinking budget
_DEFAULT_RETRY = RetryPolicy()

# HTTP status equivalent of each error type the API can send inside a 200 event stream.
_STATUS_OF_ERROR_TYPE: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def _import_sdk() -> ModuleType:
    try:
        import anthropic
    except ImportError as exc:
        raise ImportError(
            "AnthropicModel needs the anthropic SDK: pip install 'harnessed[anthropic]'"
        ) from exc
    return anthropic


class AnthropicModel:
    """A :class:`~harnessed.models.base.Model` served by Anthropic's Messages API.

    ``api_key`` and ``base_url`` fall back to ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``.
    A ``client`` (an ``anthropic.AsyncAnthropic``) may be supplied instead; it is used with SDK
    retries switched off and is not closed by :meth:`aclose`. Retrying is done by ``retry``.
    ``thinking_budget`` enables extended thinking with that many budget tokens.
    ``prompt_caching`` (on by default) puts ``cache_control`` breakpoints on the tools, the
    system prompt and the end of the history the next request repeats (at most four).
    """

    provider_name = "anthropic"
    """``gen_ai.provider.name`` in traces."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        context_window: int | None = None,
        max_output_tokens: int = 4096,
        thinking_budget: int | None = None,
        retry: RetryPolicy = _DEFAULT_RETRY,
        timeout: float = 120.0,
        temperature: float | None = None,
        client: AsyncAnthropic | None = None,
        prompt_caching: bool = True,
        structured_output: StructuredOutput = "native",
    ) -> None:
        if not model:
            raise ValueError("AnthropicModel needs a model name")
        for label, value in [("max_output_tokens", max_output_tokens), ("timeout", timeout)]:
            if value <= 0:
                raise ValueError(f"{label} must be positive, got {value}")
        if context_window is not None and context_window <= 0:
            raise ValueError(f"context_window must be positive, got {context_window}")
        if thinking_budget is not None and not _MIN_BUDGET <= thinking_budget < max_output_tokens:
            raise ValueError(
                f"thinking_budget must be >= {_MIN_BUDGET} and < max_output_tokens "
                f"({max_output_tokens}), got {thinking_budget}"
            )
        if temperature is not None and not 0 <= temperature <= 1:
            raise ValueError(f"temperature must be between 0 and 1, got {temperature}")
        if temperature is not None and thinking_budget is not None:
            raise ValueError("temperature cannot be combined with thinking_budget")

        if structured_output not in ("native", "tool"):
            raise ValueError(
                f"structured_output must be 'native' or 'tool', got {structured_output!r}"
            )
        self.structured_output: StructuredOutput = structured_output
        """``native``: typed answers through ``output_config.format`` (json_schema); ``tool``:
        a final-answer tool (older models, gateways without structured outputs)."""
        self._sdk = _import_sdk()
        self._model = model
        self._window = WindowKnowledge.initial(model, context_window, ask_server=False)
        self._max_output_tokens = max_output_tokens
        self.thinking_budget = thinking_budget
        self.retry = retry
        self.temperature = temperature
        self.prompt_caching = prompt_caching
        """Mark the request's stable prefix with ``cache_control`` breakpoints (tools, system,
        the end of the history) where the preparer gave cache points."""
        self._clients: PerLoop[AsyncAnthropic]
        if client is None:
            key = api_key or os.environ.get("ANTHROPIC_API_KEY")
            if not key:
                if base_url is None:
                    raise ValueError("no Anthropic API key: pass api_key= or set ANTHROPIC_API_KEY")
                key = "not-needed"  # a custom endpoint may not check keys
            self.base_url: str | None = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
            self._clients = PerLoop(
                lambda: self._sdk.AsyncAnthropic(
                    api_key=key, base_url=self.base_url, timeout=timeout, max_retries=0
                ),
                close_client,
            )
        else:
            given = client.with_options(max_retries=0)
            self.base_url = base_url or str(client.base_url)
            self._clients = PerLoop(lambda: given, keep_open)

    @property
    def name(self) -> str:
        return self._model

    @property
    def context_window(self) -> int | None:
        return self._window.tokens

    @property
    def context_window_source(self) -> WindowSource:
        """Where :attr:`context_window` came from (``given``, ``published`` ...)."""
        return self._window.source

    @property
    def max_output_tokens(self) -> int:
        return self._max_output_tokens

    async def aclose(self) -> None:
        """Release the HTTP connections of the client this model created for the running
        event loop (a client passed in is left open); a later request opens a new one."""
        await self._clients.aclose()

    def __repr__(self) -> str:
        return f"AnthropicModel({self._model!r})"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream the answer to ``request``, retrying transient failures before any output."""
        params = self._build_params(request)
        try:
            async for event in retrying_stream(self.retry, lambda: self._attempt(params)):
                yield event
        except ContextOverflowError as error:
            size = len(json.dumps([params.get("system"), params["messages"]], ensure_ascii=False))
            self._window.learn(error, size)
            raise

    def _build_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments for ``messages.create`` that encode ``request``."""
        system, messages, ends = _convert_messages(request.messages)
        max_tokens = request.max_output_tokens or self._max_output_tokens
        params: dict[str, Any] = {
            "model": self._model,
            "max_tokens": max_tokens,
            "messages": messages,
        }
        caching = self.prompt_caching and bool(request.cache_points)
        if system:
            params["system"] = (
                [{"type": "text", "text": system, "cache_control": _EPHEMERAL}]
                if caching
                else system
            )
        if request.tools:
            params["tools"] = [_tool_param(tool) for tool in request.tools]
            if caching:
                params["tools"][-1]["cache_control"] = _EPHEMERAL
        if caching:
            _mark_history(ends, request.cache_points)
        if request.output is not None:
            fmt = {"type": "json_schema", "schema": dict(request.output.schema)}
            params["output_config"] = {"format": fmt}
        if self.thinking_budget is not None:
            # The API needs budget < max_tokens. A request with a smaller limit than the budget
            # gets half its limit for thinking, or no thinking when that is under the minimum.
            budget = self.thinking_budget
            if budget >= max_tokens:
                budget = max_tokens // 2
            if budget >= _MIN_BUDGET:
                params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if self.temperature is not None:
            # SDK 2.x has no ``temperature`` argument; the field still goes in the body.
            params["extra_body"] = {"temperature": self.temperature}
        return sanitize(params)

    async def _attempt(self, params: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        """One request: its events, with every SDK or transport failure as a ModelError.

        A body that is not an event stream, an event that is not JSON, a stream that stops
        before ``message_stop`` or a connection lost mid-answer are all retryable errors that
        name the HTTP status and URL (and say how much of the answer had been shown).
        """
        sdk = self._sdk
        import httpx2  # the SDK's HTTP library; stream reads can fail with its errors

        response: Any = None
        tap: BodyTap | None = None
        received = shown = 0
        try:
            events = await self._clients.get().messages.create(**params, stream=True)
            response = events.response
            streaming = content_type(response) == "text/event-stream"
            tap = BodyTap(response, keep=_STREAM_HEAD if streaming else _ERROR_BODY)
            async with events:
                state = _StreamState(model=self._model)
                async for event in events:
                    received += 1
                    try:
                        outs = state.feed(event)
                    except (AttributeError, TypeError, ValueError, KeyError) as exc:
                        raise malformed(
                            _PROVIDER, response, f"a stream event is malformed ({exc})", tap
                        ) from exc
                    for out in outs:
                        shown += shown_chars(out)
                        yield out
                    if state.finished:
                        break
        except ModelError:
            await retire(response)
            raise
        except sdk.APIStatusError as exc:
            error = _status_error(exc)
            # a server failing with a 5xx may be going down: its connection is not reused
            await retire(response or (exc.response if error.retryable else None))
            raise error from exc
        except (sdk.APIConnectionError, httpx2.HTTPError) as exc:
            await retire(response)
            server = self.base_url or "api.anthropic.com"
            if response is None and silent_server(exc):
                raise ModelError(
                    f"anthropic server {server} took the request but sent no answer within "
                    "the timeout",
                    provider=_PROVIDER,
                    retryable=True,
                ) from exc
            if response is None:
                raise ModelError(
                    f"anthropic connection to {server} failed: {exc}",
                    provider=_PROVIDER,
                    retryable=True,
                ) from exc
            raise _cut(response, exc, shown) from exc
        except json.JSONDecodeError as exc:
            await retire(response)
            raise malformed(
                _PROVIDER, response, f"a stream event is not JSON ({exc})", tap
            ) from exc
        except sdk.AnthropicError as exc:
            await retire(response)
            raise ModelError(f"anthropic request failed: {exc}", provider=_PROVIDER) from exc
        if not state.finished:
            await retire(response)  # an answer that ended wrong: its connection is not reused
            assert tap is not None
            if not received:
                raise _not_a_stream(response, tap)
            what = "the stream was cut: it ended before message_stop"
            if shown:
                what += f" after {shown} characters of the answer had been shown{_NOT_AGAIN}"
            raise broken(_PROVIDER, response, what)
        yield state.response()


_NOT_AGAIN = "; not asked again, as that would repeat what was shown"
_STREAM_HEAD = 4096
"""Bytes of an event stream kept to describe it should it turn out not to be one."""
_ERROR_BODY = 64 << 10
"""Bytes kept of a body that is not an event stream (an error page or JSON error)."""


def _not_a_stream(response: Any, tap: BodyTap) -> ModelError:
    """The error for a streamed request whose body held no event: the error it states, or
    an error saying what it was."""
    if tap.received == 0 or (
        content_type(response) == "text/event-stream" and body_says_nothing(tap.head)
    ):
        return malformed(_PROVIDER, response, "the server sent a stream with no event", tap)
    stated = error_body(tap.head)
    if stated is not None:
        kind, message = stated
        text = f"{kind}: {message}" if kind else message
        status = _STATUS_OF_ERROR_TYPE.get(kind)
        return error_from_status(status, f"{text} ({origin(response)})", provider=_PROVIDER)
    return malformed(
        _PROVIDER, response, "the server answered with a body that is not an event stream", tap
    )


def _cut(response: Any, exc: Exception, shown: int) -> ModelError:
    """The error for a connection lost while the answer was streaming."""
    import httpx2

    if isinstance(exc, httpx2.TimeoutException) or type(exc).__name__ == "APITimeoutError":
        what = "the server stopped sending in the middle of the stream (read timeout)"
    else:
        what = f"the stream was cut: the connection was lost mid-answer ({exc!r})"
    if shown:
        what += f" after {shown} characters of the answer had been shown{_NOT_AGAIN}"
    return broken(_PROVIDER, response, what)


# --------------------------------------------------------------------------- requests


_EPHEMERAL = {"type": "ephemeral"}
_LOOKBACK = 20
"""The API looks for a cached prefix at each breakpoint and up to this many blocks before it."""
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


@dataclass(slots=True)
class _End:
    """Where the first ``count`` harnessed messages end in the API messages: the last block
    that may carry a cache marker, and how many blocks come up to it."""

    block: dict[str, Any] | None
    blocks: int


def _convert_messages(
    messages: Sequence[Msg],
) -> tuple[str, list[dict[str, Any]], list[_End]]:
    """Split harnessed messages into the system text and alternating API messages; the third
    value says where each prefix of ``messages`` ends (``ends[n]``: after ``n`` messages)."""
    system_parts: list[str] = []
    out: list[dict[str, Any]] = []
    ends = [_End(None, 0)]
    blocks_so_far = 0
    for msg in messages:
        if msg.role == "system":
            system_parts.extend([msg.text] if msg.text else [])
            ends.append(ends[-1])
            continue
        role = "assistant" if msg.role == "assistant" else "user"
        blocks = [p for p in (_block_param(b, role) for b in msg.content) if p is not None]
        if not blocks:
            ends.append(ends[-1])
            continue  # the API rejects empty content
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
        blocks_so_far += len(blocks)
        markable = [b for b in blocks if b["type"] not in _UNMARKABLE]
        ends.append(_End(markable[-1], blocks_so_far) if markable else ends[-1])
    for message in out:
        # Tool results must open the user turn that answers the tool calls (stable sort).
        message["content"].sort(key=lambda block: block["type"] != "tool_result")
    return "\n\n".join(system_parts), out, ends


def _mark_history(ends: list[_End], points: Sequence[int]) -> None:
    """Cache markers at the end of the stable history (the last point) and, when the prefix
    shared with the previous request ends further back than the API looks, there too: two at
    most, so with tools and system the request stays within the API's four."""
    last = ends[points[-1]] if points[-1] < len(ends) else None
    if last is None or last.block is None:
        return
    last.block["cache_control"] = _EPHEMERAL
    for point in reversed(points[:-1]):
        earlier = ends[point] if point < len(ends) else None
        if earlier is not None and earlier.block is not None:
            if last.blocks - earlier.blocks >= _LOOKBACK:
                earlier.block["cache_control"] = _EPHEMERAL
            return


def _block_param(block: ContentBlock, role: str) -> dict[str, Any] | None:
    """One content block in API form, or ``None`` when the API has no place for it."""
    if isinstance(block, TextBlock):
        # the API rejects whitespace-only text blocks; such a block carries nothing anyway
        return {"type": "text", "text": block.text} if block.text.strip() else None
    if role == "assistant":
        if isinstance(block, ThinkingBlock) and block.redacted:
            return {"type": "redacted_thinking", "data": block.redacted}
        if isinstance(block, ThinkingBlock) and block.signature:  # unsigned ones are rejected
            return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
        if isinstance(block, ToolUseBlock):
            return {
                "type": "tool_use",
                "id": block.id,
                "name": block.name,
                "input": dict(block.input),
            }
        return None
    if isinstance(block, ImageBlock):
        return _image_param(block)
    if isinstance(block, ToolResultBlock):
        content: str | list[dict[str, Any]] = block.content
        if block.images:  # the API takes images inside a tool result
            text = [{"type": "text", "text": block.content}] if block.content.strip() else []
            content = [*text, *(_image_param(image) for image in block.images)]
        return {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": content,
            "is_error": block.is_error,
        }
    return None


def _image_param(block: ImageBlock) -> dict[str, Any]:
    source: dict[str, Any] = (
        {"type": "url", "url": block.url}
        if block.url is not None
        else {"type": "base64", "media_type": block.media_type, "data": block.data}
    )
    return {"type": "image", "source": source}


def _tool_param(tool: ToolSchema) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": dict(tool.parameters),
    }


# ---------------------------------------------------------------------------- streams


@dataclass
class _Partial:
    """A content block still being received: its kind, text or JSON pieces, tool identity."""

    kind: str
    parts: list[str] = field(default_factory=list)
    signature: str = ""
    tool_id: str = ""
    tool_name: str = ""


# Which field of each content delta carries its piece of text.
_DELTA_FIELD = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "input_json_delta": "partial_json",
}


@dataclass
class _StreamState:
    """Accumulates one streamed message and translates SDK events to model events.

    The SDK builds event objects without validating them, and gateways that imitate the API do
    not always send every field, so fields are read defensively.
    """

    model: str
    open: dict[int, _Partial] = field(default_factory=dict)
    done: dict[int, ContentBlock] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    finished: bool = False

    def feed(self, event: Any) -> list[ModelEvent]:
        """Take one SDK event; return the model events it completes."""
        kind = getattr(event, "type", None)
        index = getattr(event, "index", None)
        if kind == "message_start":
            message = getattr(event, "message", None)
            self.model = _attr(message, "model") or self.model
            self._update_usage(getattr(message, "usage", None))
        elif kind == "content_block_start" and isinstance(index, int):
            self.open[index] = _start_block(getattr(event, "content_block", None))
        elif kind == "content_block_delta" and isinstance(index, int):
            return self._delta(index, getattr(event, "delta", None))
        elif kind == "content_block_stop" and isinstance(index, int):
            return self._close(index)
        elif kind == "message_delta":
            reason = _attr(getattr(event, "delta", None), "stop_reason")
            self.stop_reason = reason or self.stop_reason
            self._update_usage(getattr(event, "usage", None))
        elif kind == "message_stop":
            self.finished = True
            return [out for i in sorted(self.open) for out in self._close(i)]
        return []

    def response(self) -> ModelResponse:
        blocks = [self.done[i] for i in sorted(self.done)]
        return ModelResponse(Msg.assistant(blocks), self.usage, self.stop_reason, self.model)

    def _update_usage(self, usage: Any) -> None:
        old = self.usage
        read = _int(getattr(usage, "cache_read_input_tokens", None), old.cache_read_tokens)
        write = _int(getattr(usage, "cache_creation_input_tokens", None), old.cache_write_tokens)
        uncached = getattr(usage, "input_tokens", None)
        # Anthropic counts cached prompt tokens apart from input_tokens; report the whole prompt
        # as input so the figure means the same as for other providers.
        total_in = uncached + read + write if isinstance(uncached, int) else old.input_tokens
        output = _int(getattr(usage, "output_tokens", None), old.output_tokens)
        self.usage = Usage(total_in, output, cache_read_tokens=read, cache_write_tokens=write)

    def _delta(self, index: int, delta: Any) -> list[ModelEvent]:
        partial = self.open.get(index)
        kind = getattr(delta, "type", None)
        if partial is None:
            return []
        if kind == "signature_delta":
            partial.signature += _attr(delta, "signature")
        elif kind in _DELTA_FIELD:  # citations and unknown deltas are skipped
            piece = _attr(delta, _DELTA_FIELD[kind])
            partial.parts.append(piece)
            if piece and kind == "text_delta":
                return [TextDelta(piece)]
            if piece and kind == "thinking_delta":
                return [ThinkingDelta(piece)]
        return []

    def _close(self, index: int) -> list[ModelEvent]:
        partial = self.open.pop(index, None)
        if partial is None:
            return []
        text = clean_text("".join(partial.parts))
        if partial.kind == "text" and text.strip():
            self.done[index] = TextBlock(text)
        elif partial.kind == "thinking":
            self.done[index] = ThinkingBlock(text, signature=partial.signature or None)
        elif partial.kind == "redacted_thinking" and partial.signature:
            self.done[index] = ThinkingBlock("", redacted=partial.signature)
        elif partial.kind == "tool_use":
            call = ToolUseBlock(partial.tool_id, partial.tool_name, _parse_arguments(text))
            self.done[index] = call
            return [ToolCallReady(call)]
        return []  # server tools and unknown blocks: no harnessed block holds them


def _start_block(block: Any) -> _Partial:
    kind = _attr(block, "type")
    if kind == "tool_use":
        # The API starts with ``input: {}`` and streams the JSON; a gateway may send it whole.
        start = getattr(block, "input", None)
        first = json.dumps(dict(start)) if isinstance(start, Mapping) and start else ""
        return _Partial(kind, [first], tool_id=_attr(block, "id"), tool_name=_attr(block, "name"))
    if kind == "redacted_thinking":  # arrives whole; its encrypted data rides in `signature`
        return _Partial(kind, [], signature=_attr(block, "data"))
    text = _attr(block, "thinking" if kind == "thinking" else "text")
    return _Partial(kind, [text], signature=_attr(block, "signature"))


def _parse_arguments(raw: str) -> dict[str, Any]:
    """Decode streamed tool arguments; anything but a JSON object is kept raw and flagged."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {INVALID_ARGUMENTS_KEY: raw}
    return value if isinstance(value, dict) else {INVALID_ARGUMENTS_KEY: raw}


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) else default


def _attr(obj: object, name: str) -> str:
    value = getattr(obj, name, None)
    return value if isinstance(value, str) else ""


# ----------------------------------------------------------------------------- errors


def _status_error(exc: Any) -> ModelError:
    """Translate an SDK ``APIStatusError`` (also raised for ``error`` stream events)."""
    error_type, detail = _error_details(exc.body)
    message = f"{error_type}: {detail}" if error_type and detail else str(exc.message)
    if not isinstance(exc.body, Mapping):  # not the API's error JSON (a proxy's page ...)
        message = f"{message} ({origin(exc.response)})"
    status: int | None = exc.status_code
    retry_after: float | None = None
    if status is not None and status < 400:
        # An error event inside a successful stream: map its type to a status instead.
        status = _STATUS_OF_ERROR_TYPE.get(error_type)
    else:
        retry_after = _retry_after(exc.response.headers)
    return error_from_status(status, message, provider=_PROVIDER, retry_after=retry_after)


def _error_details(body: object) -> tuple[str, str]:
    """The ``error.type`` and ``error.message`` of an API error body ("" when absent)."""
    if isinstance(body, str):
        text = body
        try:
            body = json.loads(text)
        except json.JSONDecodeError:
            return "", text
    error = body.get("error") if isinstance(body, Mapping) else None
    if not isinstance(error, Mapping):
        return "", ""
    kind, message = error.get("type"), error.get("message")
    return (kind if isinstance(kind, str) else "", message if isinstance(message, str) else "")


def _retry_after(headers: Mapping[str, str]) -> float | None:
    try:
        value = float(headers.get("retry-after", ""))
    except ValueError:
        return None  # absent, or an HTTP date: the policy's own backoff applies
    return value if value >= 0 else None


if TYPE_CHECKING:
    from harnessed.models.base import Model

    def _conforms(model: AnthropicModel) -> Model:  # mypy checks the protocol here
        return model
