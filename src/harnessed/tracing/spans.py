"""OpenTelemetry spans for one agent call, following the GenAI semantic conventions.

The spans are made from the call's own event stream, so they show exactly what a UI sees:

* ``invoke_agent {agent}`` (INTERNAL) for the call: ``gen_ai.operation.name``,
  ``gen_ai.agent.name``, ``gen_ai.conversation.id`` (the session), ``gen_ai.provider.name``,
  ``gen_ai.request.model``, and ``harnessed.run.status`` / ``harnessed.run.iterations``;
* ``chat {model}`` (CLIENT) per model request, child of the call: ``gen_ai.request.model``,
  ``gen_ai.response.model``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens``,
  ``gen_ai.usage.output_tokens``, ``server.address`` / ``server.port``, plus the manifest's
  summary: ``harnessed.context.estimated_input_tokens``, ``harnessed.context.input_limit``,
  ``harnessed.context.window_source``, ``harnessed.context.tokens.<part>`` and
  ``harnessed.context.transforms``. Each retry is a ``harnessed.model_retry`` span event;
* ``execute_tool {tool}`` (INTERNAL) per tool call, child of the call: ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``gen_ai.tool.type``; a failed tool sets ``error.type``;
* ``compaction`` (INTERNAL) per compaction, with its reason, sizes and outcome;
* ``sandbox.acquire`` (INTERNAL) when the first ``execute`` of a call gets the session's
  sandbox: ``harnessed.sandbox.mode`` (``live`` / ``restore`` / ``cold``),
  ``harnessed.sandbox.backend``, ``harnessed.sandbox.duration_ms``; and
  ``sandbox.snapshot`` (INTERNAL) when it is archived at the call's end:
  ``harnessed.sandbox.status``, ``harnessed.sandbox.bytes``, ``harnessed.sandbox.path``, the
  backend and duration; a failed snapshot sets ``error.type`` and the ERROR status. Both are
  children of the call's span and last as long as the step took.

Overflow recovery, confirmation requests and every other harness or application event are
span events on the call's span. A failure sets ``error.type`` and the ERROR status on the spans
it ended. Nothing is recorded, and nothing runs, unless the application installed an
OpenTelemetry SDK.

The spans are made by the :class:`Tracing` capability, which an agent gets by itself when
the application installed a tracer provider before creating it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from harnessed.capabilities.base import CallContext, CallEnd, Capability, CapabilityHost
from harnessed.events import (
    AgentEndEvent,
    AgentStartEvent,
    ConfirmationRequestEvent,
    CustomEvent,
    ErrorEvent,
    Event,
    MaxItersEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    ToolResultEvent,
    UsageLimitEvent,
)

if TYPE_CHECKING:
    from harnessed.models.base import Model

__all__ = ["TRACER_NAME", "Tracing"]

TRACER_NAME = "harnessed"

_AttributeValue = str | bool | int | float | Sequence[str]


def _provider(model: Model) -> str:
    name = getattr(model, "provider_name", None)
    return name if isinstance(name, str) else "harnessed"


def _server(model: Model) -> dict[str, _AttributeValue]:
    base_url = getattr(model, "base_url", None)
    if not isinstance(base_url, str):
        return {}
    parts = urlsplit(base_url)
    found: dict[str, _AttributeValue] = {}
    if parts.hostname:
        found["server.address"] = parts.hostname
    if parts.port:
        found["server.port"] = parts.port
    return found


def _manifest_attributes(manifest: Mapping[str, Any]) -> dict[str, _AttributeValue]:
    attributes: dict[str, _AttributeValue] = {}
    for key in (
        "estimated_input_tokens",
        "input_limit",
        "context_window",
        "history_messages",
        "cached_prefix_tokens",
    ):
        value = manifest.get(key)
        if isinstance(value, int) and value >= 0:
            attributes[f"harnessed.context.{key}"] = value
    if isinstance(manifest.get("window_source"), str):
        attributes["harnessed.context.window_source"] = manifest["window_source"]
    for part, tokens in (manifest.get("breakdown") or {}).items():
        if isinstance(tokens, int):
            attributes[f"harnessed.context.tokens.{part}"] = tokens
    transforms = [str(t) for t in manifest.get("transforms") or ()]
    if transforms:
        attributes["harnessed.context.transforms"] = transforms
    return attributes


def _event_attributes(data: Mapping[str, Any]) -> dict[str, _AttributeValue]:
    """Scalar fields of an event's data as span-event attributes."""
    return {
        f"harnessed.{key}": value
        for key, value in data.items()
        if isinstance(value, str | bool | int | float)
    }


_SANDBOX_SPANS = {"sandbox_acquire": "sandbox.acquire", "sandbox_snapshot": "sandbox.snapshot"}
"""Sandbox lifecycle events (:mod:`harnessed.sandbox.events`) and their spans."""


def _fail(span: Span, error_type: str, message: str = "") -> None:
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, message[:500] or error_type))


class _RunSpans:
    """The open spans of one call, updated event by event."""

    def __init__(
        self, tracer: Tracer, agent_name: str, model: Model, session_id: str, user_id: str
    ) -> None:
        self.tracer = tracer
        self.model = model
        self.provider = _provider(model)
        self.agent = self.tracer.start_span(
            f"invoke_agent {agent_name}",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent_name,
                "gen_ai.conversation.id": session_id,
                "gen_ai.provider.name": self.provider,
                "gen_ai.request.model": model.name,
                "harnessed.user.id": user_id,
            },
        )
        self.parent = trace.set_span_in_context(self.agent)
        self.chat: Span | None = None
        self.compaction: Span | None = None
        self.manifests: dict[str, Mapping[str, Any]] = {}

    def _child(self, name: str, kind: SpanKind, attributes: dict[str, _AttributeValue]) -> Span:
        return self.tracer.start_span(name, context=self.parent, kind=kind, attributes=attributes)

    def see(self, event: Event) -> None:
        if isinstance(event, ModelCallStartEvent):
            self._end_chat("interrupted")
            attributes: dict[str, _AttributeValue] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": self.provider,
                "gen_ai.request.model": event.model,
                "harnessed.iteration": event.iteration,
                **_server(self.model),
                **_manifest_attributes(self.manifests.pop(event.model_call_id, {})),
            }
            limit = self.model.max_output_tokens
            if limit is not None:
                attributes["gen_ai.request.max_tokens"] = limit
            self.chat = self._child(f"chat {event.model}", SpanKind.CLIENT, attributes)
        elif isinstance(event, ModelCallEndEvent):
            self._finish_chat(event)
        elif isinstance(event, ToolResultEvent):
            self._tool(event)
        elif isinstance(event, CustomEvent):
            self._custom(event)
        elif isinstance(event, ConfirmationRequestEvent):
            self.agent.add_event(
                "harnessed.confirmation_request",
                {"gen_ai.tool.name": event.call.name, "harnessed.reason": event.reason},
            )
        elif isinstance(event, MaxItersEvent):
            self.agent.add_event("harnessed.max_iters", {"harnessed.max_iters": event.max_iters})
        elif isinstance(event, UsageLimitEvent):
            self.agent.add_event(
                "harnessed.usage_limit",
                {"harnessed.limit": event.limit, "harnessed.scope": event.scope},
            )
        elif isinstance(event, AgentEndEvent):
            self.agent.set_attribute("harnessed.run.status", event.status)
            self.agent.set_attribute("harnessed.run.iterations", event.iterations)
            if event.usage is not None:
                spent = event.usage
                self.agent.set_attribute("harnessed.run.requests", spent.requests)
                self.agent.set_attribute("gen_ai.usage.input_tokens", spent.input_tokens)
                self.agent.set_attribute("gen_ai.usage.output_tokens", spent.output_tokens)
                if spent.cost_usd is not None:
                    self.agent.set_attribute("harnessed.cost_usd", spent.cost_usd)
        elif isinstance(event, ErrorEvent):
            self._end_chat(event.error_type, event.message)
            _fail(self.agent, event.error_type, event.message)

    def _finish_chat(self, event: ModelCallEndEvent) -> None:
        span, self.chat = self.chat, None
        if span is None:
            return
        model = event.message.metadata.get("model")
        if isinstance(model, str):
            span.set_attribute("gen_ai.response.model", model)
        if event.stop_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [event.stop_reason])
        if event.usage is not None:
            usage = event.usage
            span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
            span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
        if event.cost_usd is not None:
            span.set_attribute("harnessed.cost_usd", event.cost_usd)
        span.end()

    def _end_chat(self, error_type: str, message: str = "") -> None:
        span, self.chat = self.chat, None
        if span is not None:
            _fail(span, error_type, message)
            span.end()

    def _tool(self, event: ToolResultEvent) -> None:
        result = event.result
        end = time.time_ns()
        span = self.tracer.start_span(
            f"execute_tool {result.name or 'tool'}",
            context=self.parent,
            kind=SpanKind.INTERNAL,
            start_time=end - int(event.duration_ms * 1_000_000),
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": result.name or "",
                "gen_ai.tool.call.id": result.tool_use_id,
                "gen_ai.tool.type": "function",
                "harnessed.tool.output_chars": len(result.content),
            },
        )
        if result.is_error:
            _fail(span, "tool_error", result.content[:200])
        span.end(end_time=end)

    def _custom(self, event: CustomEvent) -> None:
        data = event.data
        if event.name == "context_build":
            manifest = data.get("context_manifest")
            call_id = data.get("model_call_id")
            if isinstance(manifest, Mapping) and isinstance(call_id, str):
                self.manifests[call_id] = manifest
            return
        if event.name == "model_retry" and self.chat is not None:
            self.chat.add_event("harnessed.model_retry", _event_attributes(data))
            return
        if event.name == "overflow_recovery":
            self._end_chat("ContextOverflowError", str(data.get("error", "")))
        if event.name == "compaction_start":
            self.compaction = self._child("compaction", SpanKind.INTERNAL, _event_attributes(data))
            return
        if event.name == "compaction_end" and self.compaction is not None:
            span, self.compaction = self.compaction, None
            span.set_attributes(_event_attributes(data))
            if data.get("status") == "failed":
                _fail(span, str(data.get("error_type", "_OTHER")), str(data.get("error", "")))
            span.end()
            return
        if event.name in _SANDBOX_SPANS:
            self._sandbox(_SANDBOX_SPANS[event.name], data)
            return
        self.agent.add_event(f"harnessed.{event.name}", _event_attributes(data))

    def _sandbox(self, name: str, data: Mapping[str, Any]) -> None:
        """A finished sandbox step as a span of its measured length."""
        end = time.time_ns()
        duration = data.get("duration_ms")
        took = int(duration * 1_000_000) if isinstance(duration, int | float) else 0
        attributes: dict[str, _AttributeValue] = {
            f"harnessed.sandbox.{key}": value
            for key, value in data.items()
            if key not in ("error", "error_type") and isinstance(value, str | bool | int | float)
        }
        span = self.tracer.start_span(
            name,
            context=self.parent,
            kind=SpanKind.INTERNAL,
            start_time=end - took,
            attributes=attributes,
        )
        if data.get("status") == "failed":
            _fail(span, str(data.get("error_type", "_OTHER")), str(data.get("error", "")))
        span.end(end_time=end)

    def close(self, status: str, error: BaseException | None) -> None:
        if error is not None or status in ("closed", "cancelled"):
            kind = type(error).__name__ if error is not None else status
            message = str(error) if error is not None else f"the call was {status}"
            self._end_chat(kind, message)
            if self.compaction is not None:
                _fail(self.compaction, kind, message)
                self.compaction.end()
            _fail(self.agent, kind, message)
        self.agent.set_attribute("harnessed.run.status", status)
        self.agent.end()


class Tracing(Capability):
    """OpenTelemetry spans for every call of the agent.

    An agent built after the application installed a global tracer provider (the SDK's
    ``trace.set_tracer_provider``) gets it by itself; without one it has no tracing at all (no
    hook on the event path). Pass ``Tracing()`` in ``capabilities=[...]`` to trace whatever the
    global provider is at call time, or ``Tracing(tracer_provider=...)`` for a provider of its
    own.
    """

    name = "tracing"

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self.tracer_provider = tracer_provider
        self._model: Model | None = None

    @classmethod
    def when_configured(cls) -> Tracing | None:
        """A ``Tracing`` if a global tracer provider is installed, else ``None``."""
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            return None
        return cls()

    def setup(self, host: CapabilityHost) -> None:
        self._model = host.model

    def on_event(self, call: CallContext, event: Event) -> None:
        if event.source is not None:  # a sub-agent's call is traced by its own agent
            return
        spans = call.values.get(self.name)
        if spans is None:
            if not isinstance(event, AgentStartEvent) or self._model is None:
                return
            tracer = trace.get_tracer(TRACER_NAME, tracer_provider=self.tracer_provider)
            spans = call.values[self.name] = _RunSpans(
                tracer, event.agent, self._model, call.session_id, call.user_id
            )
        spans.see(event)

    async def after_call(self, call: CallContext, end: CallEnd) -> None:
        spans = call.values.pop(self.name, None)
        if isinstance(spans, _RunSpans):
            spans.close(end.status, end.error)
