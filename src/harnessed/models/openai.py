"""Chat Completions adapter for OpenAI and OpenAI-compatible servers.

:class:`OpenAIChatModel` speaks the ``/chat/completions`` streaming API through the official
``openai`` SDK, so it works with OpenAI itself and with compatible servers such as vLLM, Ollama,
DashScope's compatible mode or DeepSeek. The SDK is imported only when a model is constructed.

Retrying is ours, not the SDK's: the client is built with ``max_retries=0`` and every request
runs under :func:`~harnessed.models.retry.retrying_stream`. SDK exceptions never escape; they are
translated into :class:`~harnessed.models.errors.ModelError` and its subclasses.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from harnessed.messages import (
    ImageBlock,
    Msg,
    TextBlock,
    ToolUseBlock,
)
from harnessed.models.base import (
    ModelEvent,
    ModelRequest,
    StructuredOutput,
)
from harnessed.models.clients import PerLoop, close_client, keep_open
from harnessed.models.discovery import ask_window
from harnessed.models.errors import ContextOverflowError, ModelError
from harnessed.models.openai_answers import (
    NOT_AGAIN,
    STREAM_HEAD,
    WHOLE_BODY,
    StreamState,
    completion_events,
    cut_stream,
    malformed_stream,
    says_nothing,
    unstreamed_answer,
)
from harnessed.models.retry import RetryPolicy, error_from_status, retrying_stream
from harnessed.models.sanitize import sanitize
from harnessed.models.windows import WindowKnowledge, WindowSource
from harnessed.models.wire import (
    BodyTap,
    broken,
    content_type,
    origin,
    retire,
    shown_chars,
    silent_server,
)

if TYPE_CHECKING:
    from openai import APIError, AsyncOpenAI, AsyncStream
    from openai.types.chat import ChatCompletionChunk

__all__ = ["OpenAIChatModel"]

MaxTokensParam = Literal["max_completion_tokens", "max_tokens"]

_PROVIDER = "openai"
_PLACEHOLDER_KEY = "sk-no-key-required"
_OFFICIAL_HOST = "api.openai.com"


class OpenAIChatModel:
    """A :class:`~harnessed.models.base.Model` backed by an OpenAI-compatible chat endpoint.

    ``api_key`` and ``base_url`` fall back to ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``. A
    server reached through a custom ``base_url`` may need no key at all, in which case a
    placeholder is sent. Pass ``client`` to reuse an existing ``AsyncOpenAI`` client (its own
    retries are switched off); it is then not closed by :meth:`aclose`.
    ``prompt_cache_key`` sends each session's cache key so that OpenAI routes its requests to
    the same prompt cache; ``None`` (the default) sends it only to ``api.openai.com``.
    """

    provider_name = "openai"
    """``gen_ai.provider.name`` in traces."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        retry: RetryPolicy = RetryPolicy(),  # noqa: B008 - frozen, so sharing is safe
        timeout: float = 120.0,
        temperature: float | None = None,
        max_tokens_param: MaxTokensParam | None = None,
        extra_body: Mapping[str, Any] | None = None,
        client: AsyncOpenAI | None = None,
        prompt_cache_key: bool | None = None,
        structured_output: StructuredOutput = "native",
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("OpenAIChatModel 'model' must be a non-empty model name")
        limits = {"context_window": context_window, "max_output_tokens": max_output_tokens}
        for arg, value in {**limits, "timeout": timeout}.items():
            if value is not None and value <= 0:
                raise ValueError(f"OpenAIChatModel '{arg}' must be positive, got {value!r}")
        if max_tokens_param not in (None, "max_completion_tokens", "max_tokens"):
            raise ValueError(
                "OpenAIChatModel 'max_tokens_param' must be 'max_completion_tokens' or "
                f"'max_tokens', got {max_tokens_param!r}"
            )

        if structured_output not in ("native", "tool"):
            raise ValueError(
                "OpenAIChatModel 'structured_output' must be 'native' or 'tool', got "
                f"{structured_output!r}"
            )
        self.structured_output: StructuredOutput = structured_output
        """``native``: typed answers through ``response_format`` (json_schema); ``tool``: a
        final-answer tool, for servers without it."""
        self._model = model
        self._max_output_tokens = max_output_tokens
        self.retry = retry
        self.timeout = timeout
        self.temperature = temperature
        self.extra_body: dict[str, Any] = dict(extra_body or {})

        self._api_key: str | None
        if client is not None:  # a copy sharing its connection pool, without SDK retries
            given = client.with_options(max_retries=0)
            self._clients = PerLoop(lambda: given, keep_open)
            self.base_url: str | None = base_url or str(client.base_url)
            self._api_key = client.api_key
        else:
            import openai

            self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
            key = api_key or os.environ.get("OPENAI_API_KEY") or None
            if key is None:
                if self.base_url is None:
                    raise ValueError(
                        "OpenAIChatModel needs an API key: pass api_key=... or set OPENAI_API_KEY "
                        "(or point base_url / OPENAI_BASE_URL at a server that needs no key)"
                    )
                key = _PLACEHOLDER_KEY
            self._api_key = key
            self._clients = PerLoop(
                lambda: openai.AsyncOpenAI(
                    api_key=key, base_url=self.base_url, timeout=timeout, max_retries=0
                ),
                close_client,
            )

        official = self.base_url is None or urlsplit(self.base_url).hostname == _OFFICIAL_HOST
        self._window = WindowKnowledge.initial(model, context_window, ask_server=not official)
        if max_tokens_param is None:
            max_tokens_param = "max_completion_tokens" if official else "max_tokens"
        self.max_tokens_param: MaxTokensParam = max_tokens_param
        self.prompt_cache_key = official if prompt_cache_key is None else prompt_cache_key
        """Send the session's cache key as ``prompt_cache_key`` (default: only to OpenAI's
        own API; a compatible server may reject a field it does not know)."""

    # ------------------------------------------------------------ protocol
    @property
    def name(self) -> str:
        """The model identifier sent to the server."""
        return self._model

    @property
    def context_window(self) -> int | None:
        """The context window in tokens: as given, else as the server reports or states it,
        else the published window of the model name, else ``None``."""
        return self._window.tokens

    @property
    def context_window_source(self) -> WindowSource:
        """Where :attr:`context_window` came from (``given``, ``server``, ...)."""
        return self._window.source

    async def discover_context_window(self) -> int | None:
        """Ask a self-hosted server (vLLM, llama.cpp, Ollama) for the model's window, once;
        the agent does this before its first request. Not done when ``context_window=`` was
        given or for OpenAI's own API."""
        if not self._window.discovered and self.base_url is not None:
            reported = await ask_window(
                self.base_url, self._model, api_key=self._api_key, timeout=min(self.timeout, 10)
            )
            self._window.reported(reported)
        return self._window.tokens

    @property
    def max_output_tokens(self) -> int | None:
        """The output limit used when a request does not set its own."""
        return self._max_output_tokens

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream the answer to ``request``, retrying transient failures per ``self.retry``.

        A request the server rejects as too long teaches the model its window (as stated in
        the error, or smaller than the rejected request), so the next one is fitted to it.
        """
        params = self.build_params(request)
        try:
            async for event in retrying_stream(self.retry, lambda: self._stream_once(params)):
                yield event
        except ContextOverflowError as error:
            self._window.learn(error, len(json.dumps(params["messages"], ensure_ascii=False)))
            raise

    async def aclose(self) -> None:
        """Close the HTTP client this model created for the running event loop (a client
        passed in is left open). The model stays usable: a later request opens a new one."""
        await self._clients.aclose()

    # ------------------------------------------------------------- request
    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments for ``chat.completions.create`` that carry ``request``."""
        params: dict[str, Any] = {
            "model": self._model,
            "messages": sanitize(_convert_messages(request.messages)),
            "stream": True,
            "stream_options": {"include_usage": True},
            "timeout": self.timeout,
        }
        if request.tools:
            params["tools"] = sanitize(
                [{"type": "function", "function": t.to_dict()} for t in request.tools]
            )
        if request.output is not None:
            schema: dict[str, Any] = {
                "name": request.output.name,
                "schema": dict(request.output.schema),
                "strict": request.output.strict,
            }
            if request.output.description:
                schema["description"] = request.output.description
            params["response_format"] = {"type": "json_schema", "json_schema": schema}
        limit = request.max_output_tokens or self._max_output_tokens
        if limit is not None:
            params[self.max_tokens_param] = limit
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.prompt_cache_key and request.cache_key:
            params["prompt_cache_key"] = request.cache_key
        if self.extra_body:
            params["extra_body"] = dict(self.extra_body)
        return params

    # ------------------------------------------------------------ response
    async def _stream_once(self, params: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        """One attempt: send the request and translate the chunk stream into events.

        Whatever the server sends that is not a chunk stream (an HTML page, a JSON error, a
        truncated or empty body, an event that is not JSON) becomes a retryable
        :class:`ModelError` naming the HTTP status and URL; a connection cut mid-stream says
        so, and how much of the answer had been shown.
        """
        import openai

        state = StreamState()
        shown = 0  # characters of answer (text and thinking) already yielded
        response: Any = None
        tap: BodyTap | None = None
        try:
            client = self._clients.get()
            chunks: AsyncStream[ChatCompletionChunk] = await client.chat.completions.create(
                **params
            )
            response = chunks.response
            streaming = content_type(response) == "text/event-stream"
            tap = BodyTap(response, keep=STREAM_HEAD if streaming else WHOLE_BODY)
            async with chunks:
                async for chunk in chunks:
                    try:
                        events = state.feed(chunk)
                    except (AttributeError, TypeError, ValueError, KeyError) as exc:
                        raise malformed_stream(
                            response, f"a stream event is not a chat completion chunk ({exc})", tap
                        ) from exc
                    for event in events:
                        shown += shown_chars(event)
                        yield event
        except ModelError:
            await retire(response)
            raise
        except openai.APIConnectionError as exc:
            await retire(response)
            if response is None:  # no answer at all: the server could not be reached
                raise _map_error(exc) from exc
            raise cut_stream(response, exc, shown, self.timeout) from exc
        except openai.OpenAIError as exc:
            error = _map_error(exc)
            # a server failing with a 5xx may be going down: its connection is not reused
            await retire(response or (getattr(exc, "response", None) if error.retryable else None))
            raise error from exc
        except json.JSONDecodeError as exc:
            await retire(response)
            raise malformed_stream(response, f"a stream event is not JSON ({exc})", tap) from exc
        if state.finish_reason is not None:
            for event in state.finish():
                yield event
            return
        await retire(response)  # an answer that ended wrong: its connection is not reused
        if not state.received and tap is not None and not says_nothing(tap):
            for event in unstreamed_answer(response, tap):
                yield event
            return
        # Some servers (llama.cpp's, for one) answer a streamed request they cannot serve with
        # an empty 200 or a stream cut short, and give the real reason (a 400 "context length
        # exceeded") only to a request without streaming. Ask once that way, unless part of
        # the answer was shown already: then the failure stays a failure of this attempt.
        if shown:
            raise broken(
                _PROVIDER,
                response,
                "the stream was cut: it ended before the model finished (no finish_reason) "
                f"after {shown} characters of the answer had been shown{NOT_AGAIN}",
            )
        why = (
            "the server closed the stream without sending any chunk"
            if not state.received
            else "the stream ended before the model finished (no finish_reason)"
        )
        for event in await self._ask_without_streaming(params, why):
            yield event

    async def _ask_without_streaming(self, params: dict[str, Any], why: str) -> list[ModelEvent]:
        """The same request without streaming: the server's real answer or its real error.

        It goes out on a fresh connection: the stream's connection was retired, as a server
        that sent an empty stream may be about to drop it.
        """
        import openai

        plain = {k: v for k, v in params.items() if k not in ("stream", "stream_options")}
        client = self._clients.get()
        try:
            raw = await client.chat.completions.with_raw_response.create(**plain, stream=False)
            response = raw.http_response
            body = await response.aread()
        except openai.OpenAIError as exc:
            error = _map_error(exc)
            error.message = f"{why}; asked again without streaming, the server said: {error}"
            error.args = (error.message,)
            raise error from exc
        try:
            return completion_events(response, body)
        except ModelError as error:
            await retire(response)
            error.message = f"{why}; asked again without streaming: {error.message}"
            error.args = (error.message,)
            raise


def _convert_messages(messages: Sequence[Msg]) -> list[dict[str, Any]]:
    """All messages in chat-completions form.

    Tool messages carry text only, so images a tool returned follow the run of tool messages
    they belong to, in one user message (the tool messages must stay right after the call).
    """
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role != "tool" and pending:
            out.append({"role": "user", "content": pending})
            pending = []
        out.extend(_convert_message(msg))
        for result in msg.tool_results if msg.role == "tool" else ():
            if result.images:
                pending.append(
                    {"type": "text", "text": f"Images returned by tool call {result.tool_use_id}:"}
                )
                pending.extend(_image_part(image) for image in result.images)
    if pending:
        out.append({"role": "user", "content": pending})
    return out


def _image_part(block: ImageBlock) -> dict[str, Any]:
    url = block.url or f"data:{block.media_type};base64,{block.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _convert_message(msg: Msg) -> list[dict[str, Any]]:
    """Turn one :class:`Msg` into the chat-completions message(s) that carry it."""
    if msg.role == "system":
        return [{"role": "system", "content": msg.text}]
    if msg.role == "user":
        if not any(isinstance(b, ImageBlock) for b in msg.content):
            return [{"role": "user", "content": msg.text}]
        parts: list[dict[str, Any]] = []
        for block in msg.content:
            if isinstance(block, TextBlock):
                parts.append({"type": "text", "text": block.text})
            elif isinstance(block, ImageBlock):
                parts.append(_image_part(block))
        return [{"role": "user", "content": parts}]
    if msg.role == "assistant":
        text = "".join(b.text for b in msg.content if isinstance(b, TextBlock))
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        if msg.tool_uses:
            out["tool_calls"] = [_tool_call(call) for call in msg.tool_uses]
        elif not text:
            out["content"] = ""  # a bare assistant message must still carry content
        return [out]
    return [
        {"role": "tool", "tool_call_id": r.tool_use_id, "content": r.content}
        for r in msg.tool_results
    ]


def _tool_call(call: ToolUseBlock) -> dict[str, Any]:
    arguments = json.dumps(dict(call.input), ensure_ascii=False)
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def _transient(message: str) -> ModelError:
    return ModelError(message, provider=_PROVIDER, retryable=True)


def _map_error(exc: Exception) -> ModelError:
    """Translate an SDK exception into the matching harnessed error."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        where = origin(exc.response)  # named when the body is not the API's error JSON
        return error_from_status(
            exc.status_code,
            _describe(exc) if isinstance(exc.body, Mapping) else f"{_describe(exc)} ({where})",
            provider=_PROVIDER,
            retry_after=_retry_after(exc.response.headers),
        )
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        url = getattr(getattr(exc, "request", None), "url", None)
        where = f" at {url}" if url else ""
        if silent_server(exc):
            return _transient(
                f"the OpenAI-compatible server{where} took the request but sent no answer "
                "within the timeout"
            )
        return _transient(f"could not reach the OpenAI-compatible server{where}: {exc}")
    if isinstance(exc, openai.APIError) and not isinstance(exc, openai.APIResponseValidationError):
        # An error event sent inside an otherwise successful stream.
        return error_from_status(None, _describe(exc), provider=_PROVIDER)
    return ModelError(f"OpenAI SDK error: {exc}", provider=_PROVIDER)


def _describe(exc: APIError) -> str:
    """The provider's message, plus its error code and any non-JSON body text."""
    message = exc.message or str(exc)
    code = exc.code
    if code and code not in message:
        message = f"{message} (code: {code})"
    body = exc.body
    if isinstance(body, str) and body.strip() and body.strip() not in message:
        message = f"{message}: {body.strip()[:300]}"
    return message


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from a ``retry-after-ms`` or numeric ``Retry-After`` header, if present."""
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            seconds = float(headers.get(header, "")) / scale
        except ValueError:
            continue
        if seconds >= 0:
            return seconds
    return None
