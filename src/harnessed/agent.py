"""HarnessAgent: configuration and the ReAct loop behind ``call`` and ``stream_events``.

One agent object is configured once and shared by every session. A call loads the session's
:class:`~harnessed.state.AgentState`, appends the input, and loops: prepare the request →
stream the model → run the requested tools → prepare again ..., until the model answers without
tool calls or ``max_iters`` model requests were made. State is saved after every completed step,
so a failure never leaves half a step (a tool call without its result) behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harnessed.context.compiler import ContextCompiler
from harnessed.context.manifest import ContextManifest
from harnessed.context.policy import ContextPolicy
from harnessed.context.seam import PrepareInfo, RequestPreparer
from harnessed.context.sources import (
    ContextSource,
    SourceFailurePolicy,
    SourceFunction,
    SourceSet,
    validate_id,
)
from harnessed.context.workspace_refs import WorkspaceRefs, load_workspace_refs
from harnessed.events import (
    AgentEndEvent,
    AgentStartEvent,
    CustomEvent,
    ErrorEvent,
    Event,
    MaxItersEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harnessed.messages import Msg, ToolResultBlock, ToolUseBlock, new_id
from harnessed.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    TextDelta,
    ThinkingDelta,
    ToolCallReady,
)
from harnessed.models.errors import ModelError
from harnessed.models.registry import resolve_model
from harnessed.runtime import RuntimeContext, SessionLocks
from harnessed.state.agent_state import AgentState, StateKey
from harnessed.state.store import AgentStateStore, InMemoryStateStore, JsonFileStateStore
from harnessed.tools.base import Tool
from harnessed.tools.context import ToolContext
from harnessed.tools.toolkit import ToolGuard, Toolkit

__all__ = ["AgentInput", "HarnessAgent"]

logger = logging.getLogger(__name__)

AgentInput = str | Msg | Sequence[Msg] | None

_STATE_DIR = (".harnessed", "state")


class HarnessAgent:
    """A long-running agent: a model, tools, and a harness around every request.

    Args:
        name: The agent's id (also the default session id). Letters, digits, ``_.-``.
        model: A :class:`~harnessed.models.Model` or a string such as ``"openai:gpt-4.1-mini"``.
        sys_prompt: The agent's role and rules, sent as system instructions.
        tools: Tools made with :func:`harnessed.tool`.
        workspace: A directory for the agent's files; state is kept under it by default.
        state_store: Where :class:`AgentState` is kept (default: JSON files in the workspace,
            or memory when there is no workspace).
        max_iters: The most model requests one call may make (default 10).
        max_output_tokens: Limit on generated tokens per request (default: the model's).
        prepare: The step that turns state into each model request (the context compiler).
        tool_guard: Checked before each tool call (plan mode, permissions).
    """

    def __init__(
        self,
        name: str,
        model: Model | str,
        *,
        sys_prompt: str = "",
        tools: Iterable[Tool] = (),
        workspace: str | Path | None = None,
        state_store: AgentStateStore | None = None,
        max_iters: int = 10,
        max_output_tokens: int | None = None,
        instructions: Mapping[str, str] | None = None,
        context_policy: ContextPolicy | None = None,
        max_context_tokens: int = 8_000,
        context_files: Sequence[str] = (),
        prepare: RequestPreparer | None = None,
        tool_guard: ToolGuard | None = None,
    ) -> None:
        if (
            not isinstance(name, str)
            or not name
            or not all(c.isalnum() or c in "_.-" for c in name)
        ):
            raise ValueError(
                f"HarnessAgent name must be non-empty letters, digits, '_', '.' or '-': {name!r}"
            )
        if max_iters < 1:
            raise ValueError(f"HarnessAgent max_iters must be at least 1, got {max_iters}")
        if max_output_tokens is not None and max_output_tokens <= 0:
            raise ValueError("HarnessAgent max_output_tokens must be positive")
        if max_context_tokens <= 0:
            raise ValueError("HarnessAgent max_context_tokens must be positive")
        self.name = name
        self.model: Model = resolve_model(model)
        self.sys_prompt = sys_prompt
        self.toolkit = Toolkit(tools)
        self.workspace = Path(workspace).resolve() if workspace is not None else None
        if state_store is None:
            state_store = (
                JsonFileStateStore(self.workspace.joinpath(*_STATE_DIR))
                if self.workspace is not None
                else InMemoryStateStore()
            )
        self.state_store = state_store
        self.max_iters = max_iters
        self.max_output_tokens = max_output_tokens
        self.max_context_tokens = max_context_tokens
        self.context_files = tuple(context_files)
        self.sources = SourceSet()
        self.compiler = ContextCompiler(
            sys_prompt=sys_prompt,
            policy=context_policy,
            sources=self.sources,
            refs_loader=self._load_workspace_refs if self.workspace is not None else None,
        )
        for key, text in (instructions or {}).items():
            self.add_instruction(key, text)
        self.prepare: RequestPreparer = prepare or self.compiler
        self.tool_guard = tool_guard
        self._locks = SessionLocks()

    # -------------------------------------------------------- configuration
    def add_instruction(self, instruction_id: str, text: str) -> None:
        """Add a trusted business rule to the system instructions (at start-up)."""
        validate_id(instruction_id, "instruction id")
        if instruction_id in self.compiler.instructions:
            raise ValueError(f"an instruction with id {instruction_id!r} is already registered")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"instruction {instruction_id!r} must be non-blank text")
        self.compiler.instructions[instruction_id] = text

    def add_context_source(
        self,
        source_id: str,
        source: ContextSource | SourceFunction,
        *,
        timeout: float = 5.0,
        on_failure: SourceFailurePolicy = SourceFailurePolicy.FAIL,
    ) -> None:
        """Register a dynamic source, loaded before every reasoning request (never here)."""
        self.sources.add(source_id, source, timeout=timeout, on_failure=on_failure)

    def last_manifest(self, ctx: RuntimeContext | None = None) -> ContextManifest | None:
        """The manifest of the most recent request preparation of a session."""
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        return self.compiler.last_manifest(self.name, ctx.user_id, ctx.session)

    async def _load_workspace_refs(self) -> WorkspaceRefs:
        assert self.workspace is not None
        return await load_workspace_refs(
            _LocalFiles(self.workspace),
            self.compiler.meter.estimator,
            max_context_tokens=self.max_context_tokens,
            context_files=self.context_files,
        )

    # ------------------------------------------------------------ public API
    async def call(self, input: AgentInput, ctx: RuntimeContext | None = None) -> Msg:
        """Run the agent on ``input`` and return its final reply."""
        reply: Msg | None = None
        async for event in self.stream_events(input, ctx):
            if isinstance(event, AgentEndEvent):
                reply = event.reply
        if reply is None:  # pragma: no cover - stream_events always ends with agent_end or raises
            raise RuntimeError("agent run ended without a reply")
        return reply

    def call_sync(self, input: AgentInput, ctx: RuntimeContext | None = None) -> Msg:
        """Blocking form of :meth:`call` for scripts (not for use inside an event loop)."""
        return asyncio.run(self.call(input, ctx))

    async def stream_events(
        self, input: AgentInput, ctx: RuntimeContext | None = None
    ) -> AsyncIterator[Event]:
        """Run the agent on ``input``, yielding typed events as the work happens.

        The last event is :class:`AgentEndEvent` on success; on failure an
        :class:`ErrorEvent` is yielded and the exception is raised.
        """
        messages = _input_messages(input)
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        key = StateKey(self.name, ctx.user_id, ctx.session)
        async with self._locks.hold(key.agent_id, key.user_id, key.session_id):
            state = await self.load_state(ctx)
            run = _Run(self, ctx, state)
            async for event in run.execute(messages):
                yield event

    async def close(self) -> None:
        """Release what the agent holds (the model's HTTP client, if it has one)."""
        closer = getattr(self.model, "aclose", None)
        if closer is not None:
            await closer()

    async def __aenter__(self) -> HarnessAgent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def load_state(self, ctx: RuntimeContext | None = None) -> AgentState:
        """The stored state of a session (a fresh one when the session is new)."""
        ctx = (ctx or RuntimeContext()).resolved(self.name)
        key = StateKey(self.name, ctx.user_id, ctx.session)
        state = await self.state_store.load(key)
        return state if state is not None else AgentState.new(key)

    def draft_request(self, state: AgentState, model_call_id: str) -> ModelRequest:
        """The request before preparation: system prompt, working history and tool schemas."""
        messages: list[Msg] = []
        if self.sys_prompt:
            messages.append(Msg.system(self.sys_prompt))
        messages.extend(state.history)
        return ModelRequest(
            messages=tuple(messages),
            tools=self.toolkit.schemas(),
            max_output_tokens=self.max_output_tokens,
            call_id=model_call_id,
        )


class _Run:
    """One call of one session: the loop and the events it yields."""

    def __init__(self, agent: HarnessAgent, ctx: RuntimeContext, state: AgentState) -> None:
        self.agent = agent
        self.ctx = ctx
        self.state = state
        self.pending: asyncio.Queue[Event] = asyncio.Queue()
        self.run_cache: dict[str, Any] = {}
        self.base: dict[str, Any] = {"run_id": ctx.run_id or "", "session_id": ctx.session}

    def emit(self, name: str, data: Mapping[str, Any]) -> None:
        """Queue a custom event; it is yielded at the next opportunity, in order."""
        self.pending.put_nowait(CustomEvent(name=name, data=dict(data), **self.base))

    def _drain(self) -> list[Event]:
        events: list[Event] = []
        while not self.pending.empty():
            events.append(self.pending.get_nowait())
        return events

    async def execute(self, messages: list[Msg]) -> AsyncIterator[Event]:
        agent, state = self.agent, self.state
        yield AgentStartEvent(
            agent=agent.name,
            user_id=self.ctx.user_id,
            input=messages[-1] if messages else None,
            **self.base,
        )
        iterations = 0
        try:
            if messages:
                state.append(*messages)
            while True:
                if iterations >= agent.max_iters:
                    yield MaxItersEvent(max_iters=agent.max_iters, **self.base)
                    reply = Msg.assistant(
                        f"I stopped after {agent.max_iters} model requests, the limit for one "
                        "call (max_iters), before finishing the task. Call again to continue.",
                        metadata={"harness": "max_iters"},
                    )
                    state.append(reply)
                    await agent.state_store.save(state)
                    yield AgentEndEvent(
                        reply=reply, status="max_iters", iterations=iterations, **self.base
                    )
                    return
                iterations += 1
                response: ModelResponse | None = None
                async for event in self._model_step(iterations):
                    if isinstance(event, ModelResponse):
                        response = event
                    else:
                        yield event
                assert response is not None
                message = response.message
                calls = message.tool_uses
                if not calls:
                    state.append(message)
                    await agent.state_store.save(state)
                    yield AgentEndEvent(
                        reply=message, status="completed", iterations=iterations, **self.base
                    )
                    return
                results: list[ToolResultBlock] = []
                async for event in self._tool_step(calls, results):
                    yield event
                state.append(message, *(_result_msg(r) for r in results))
                await agent.state_store.save(state)
        except (Exception, asyncio.CancelledError) as exc:
            for event in self._drain():
                yield event
            if not isinstance(exc, asyncio.CancelledError):
                yield ErrorEvent(error_type=type(exc).__name__, message=str(exc), **self.base)
            raise

    async def _model_step(self, iteration: int) -> AsyncIterator[Event | ModelResponse]:
        agent = self.agent
        model_call_id = new_id("mc_")
        info = PrepareInfo(
            agent_name=agent.name,
            runtime=self.ctx,
            model=agent.model,
            model_call_id=model_call_id,
            iteration=iteration,
            emit=self.emit,
            run_cache=self.run_cache,
        )
        try:
            request = await agent.prepare(
                self.state, agent.draft_request(self.state, model_call_id), info
            )
        finally:
            for event in self._drain():
                yield event
        yield ModelCallStartEvent(
            model_call_id=model_call_id, iteration=iteration, model=agent.model.name, **self.base
        )
        response: ModelResponse | None = None
        async for chunk in agent.model.stream(request):
            if isinstance(chunk, TextDelta):
                yield TextDeltaEvent(model_call_id=model_call_id, text=chunk.text, **self.base)
            elif isinstance(chunk, ThinkingDelta):
                yield ThinkingDeltaEvent(
                    model_call_id=model_call_id, thinking=chunk.thinking, **self.base
                )
            elif isinstance(chunk, ToolCallReady):
                yield ToolCallEvent(model_call_id=model_call_id, call=chunk.call, **self.base)
            elif isinstance(chunk, ModelResponse):
                response = chunk
        if response is None:
            raise ModelError(f"model {agent.model.name!r} ended its stream without a response")
        observe = getattr(agent.prepare, "after_response", None)
        if observe is not None:
            observe(info, response)
        message = response.message
        if message.role != "assistant":
            raise ModelError(f"model returned a {message.role!r} message, expected 'assistant'")
        message = message.replace(
            metadata={**message.metadata, "model_call_id": model_call_id, "model": agent.model.name}
        )
        response = ModelResponse(
            message=message,
            usage=response.usage,
            stop_reason=response.stop_reason,
            model=response.model,
        )
        yield ModelCallEndEvent(
            model_call_id=model_call_id,
            message=message,
            usage=response.usage,
            stop_reason=response.stop_reason,
            **self.base,
        )
        yield response

    async def _tool_step(
        self, calls: list[ToolUseBlock], results: list[ToolResultBlock]
    ) -> AsyncIterator[Event]:
        """Run the calls, yielding result and custom events while they run."""
        agent = self.agent

        def on_result(result: ToolResultBlock, duration_ms: float) -> None:
            self.pending.put_nowait(
                ToolResultEvent(result=result, duration_ms=round(duration_ms, 3), **self.base)
            )

        def make_context(call: ToolUseBlock) -> ToolContext:
            return ToolContext(
                agent_name=agent.name,
                runtime=self.ctx,
                state=self.state,
                call_id=call.id,
                workspace=agent.workspace,
                emit=self.emit,
            )

        step = asyncio.ensure_future(
            agent.toolkit.run_step(calls, make_context, agent.tool_guard, on_result)
        )
        try:
            while not step.done():
                getter = asyncio.ensure_future(self.pending.get())
                await asyncio.wait({getter, step}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
            for event in self._drain():
                yield event
            results.extend(step.result())
        finally:
            if not step.done():
                step.cancel()
                await _quietly(step)


async def _quietly(task: Awaitable[Any]) -> None:
    with contextlib.suppress(BaseException):  # the step was cancelled on purpose
        await task


class _LocalFiles:
    """Workspace file access for the context loader (replaced by the Workspace filesystem)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    async def exists(self, path: str) -> bool:
        return await asyncio.to_thread((self.root / path).exists)

    async def read_text(self, path: str) -> str:
        return await asyncio.to_thread((self.root / path).read_text, "utf-8")

    async def list_tree(self, path: str) -> list[str]:
        def walk() -> list[str]:
            base = self.root / path
            return [str(p.relative_to(self.root)) for p in base.rglob("*") if p.is_file()]

        return await asyncio.to_thread(walk)


def _result_msg(result: ToolResultBlock) -> Msg:
    return Msg("tool", (result,), name=result.name)


def _input_messages(input: AgentInput) -> list[Msg]:
    if input is None:
        return []
    if isinstance(input, str):
        if not input.strip():
            raise ValueError("agent input must not be blank")
        return [Msg.user(input)]
    if isinstance(input, Msg):
        return [input]
    messages = list(input)
    for m in messages:
        if not isinstance(m, Msg):
            raise TypeError(f"agent input must be a str, a Msg or a list of Msg, got {m!r}")
    return messages
