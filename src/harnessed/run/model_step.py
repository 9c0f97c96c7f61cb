"""A model step: prepare the request, stream the answer, recover from a context overflow."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from harnessed.capabilities.base import ModelCall
from harnessed.capabilities.materials import Material
from harnessed.capabilities.seam import PrepareInfo
from harnessed.compaction.recovery import overflow_not_recovered
from harnessed.events import (
    CustomEvent,
    Event,
    ModelCallEndEvent,
    ModelCallStartEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
)
from harnessed.messages import ContentBlock, Msg, TextBlock, ToolUseBlock, new_id
from harnessed.models.base import (
    USAGE_KEY,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    RetryNotice,
    TextDelta,
    ThinkingDelta,
    ToolCallReady,
)
from harnessed.models.errors import ContextOverflowError, ModelError
from harnessed.run.base import RunBase
from harnessed.run.deps import Interrupted, close_stream
from harnessed.tool_call_ids import ResponseIds

__all__ = ["ModelSteps"]

logger = logging.getLogger(__name__)

_CALL_INSTRUCTIONS = "call_instructions"


@dataclass(slots=True)
class _Streamed:
    """What the model has streamed in one step so far."""

    ids: ResponseIds
    texts: list[str] = field(default_factory=list)
    ready: list[ToolUseBlock] = field(default_factory=list)
    response: ModelResponse | None = None
    produced: bool = False


class ModelSteps(RunBase):
    """Preparing a request and streaming the model's answer (overflow recovery, retries
    shown, an interrupt keeps what was streamed)."""

    async def _model_step(
        self, iteration: int, overflow: ContextOverflowError | None = None
    ) -> AsyncIterator[Event | ModelResponse]:
        """Prepare → stream → settle → end; a context overflow prepares the step once more
        with a forced compaction."""
        agent = self.agent
        info = await self._prepare_info(iteration, overflow)
        model_call_id = info.model_call_id
        revision = self.state.history_revision
        self.summary_error = None
        prepared: list[ModelRequest] = []
        async for event in self._prepare(info, prepared):
            yield event
        request = prepared[0]
        if overflow is not None and self.state.history_revision == revision:
            raise overflow_not_recovered(
                overflow, shrunk=False, summary_error=self.summary_error
            ) from overflow
        # the preparation's records go out with the step's message (one write per step part)
        yield ModelCallStartEvent(
            model_call_id=model_call_id, iteration=iteration, model=agent.model.name, **self.base
        )
        streamed = _Streamed(self._response_ids())
        stream = agent.model.stream(request)
        stop = (
            asyncio.ensure_future(self.control.wait_interrupted())
            if self.control is not None
            else None
        )
        try:
            async for event in self._stream(model_call_id, stream, stop, streamed):
                yield event
            response = self._settle(info, streamed)
        except ContextOverflowError as exc:
            await self._model_done(ModelCall(model_call_id, iteration, request, error=exc))
            # Overflow recovery: prepare this step again with a forced compaction and send it
            # once more (tools are not re-run, the input is not re-added).
            if streamed.produced or agent.compaction is None:
                raise
            if overflow is not None:
                raise overflow_not_recovered(exc, shrunk=True) from exc
            self.emit("overflow_recovery", {"model_call_id": model_call_id, "error": str(exc)})
            async for retried in self._model_step(iteration, exc):
                yield retried
            return
        except (Exception, asyncio.CancelledError) as exc:
            await self._model_done(ModelCall(model_call_id, iteration, request, error=exc))
            raise
        finally:
            if stop is not None:
                stop.cancel()
        async for item in self._model_end(ModelCall(model_call_id, iteration, request, response)):
            yield item

    async def _prepare_info(
        self, iteration: int, overflow: ContextOverflowError | None
    ) -> PrepareInfo:
        agent = self.agent
        return PrepareInfo(
            agent_name=agent.name,
            runtime=self.ctx,
            model=agent.model,
            model_call_id=new_id("mc_"),
            iteration=iteration,
            emit=self.emit,
            run_cache=self.run_cache,
            retry=overflow is not None,
            force_compaction=overflow is not None,
            instructions=await self._call_instructions(),
        )

    def _response_ids(self) -> ResponseIds:
        """Every call gets an id that is well formed and new to the session before it is
        shown, logged or run (servers repeat ids, or send none): see harnessed.tool_call_ids.
        The working history is the log's (with compaction's views of the same calls) and what
        this run added but has not written yet."""
        unwritten = {c.id for r in self.records if r.msg is not None for c in r.msg.tool_uses}
        return ResponseIds(self.agent.conversation.call_ids(self.key), unwritten)

    async def _stream(
        self,
        model_call_id: str,
        stream: AsyncIterator[ModelEvent],
        stop: asyncio.Future[Any] | None,
        streamed: _Streamed,
    ) -> AsyncIterator[Event]:
        """The model's chunks as events; what came is kept in ``streamed`` (an interrupt saves
        it as a partial answer)."""
        while True:
            try:
                chunk = await self._next_chunk(stream, stop)
            except Interrupted:
                await close_stream(stream)
                self._save_partial(model_call_id, "".join(streamed.texts), streamed.ready)
                raise
            if chunk is None:
                break
            if isinstance(chunk, RetryNotice):  # shown and logged; nothing produced yet
                yield self._retry_event(model_call_id, chunk)
                continue
            streamed.produced = True
            if isinstance(chunk, TextDelta):
                streamed.texts.append(chunk.text)
                yield TextDeltaEvent(model_call_id=model_call_id, text=chunk.text, **self.base)
            elif isinstance(chunk, ThinkingDelta):
                yield ThinkingDeltaEvent(
                    model_call_id=model_call_id, thinking=chunk.thinking, **self.base
                )
            elif isinstance(chunk, ToolCallReady):
                call = streamed.ids.call(chunk.call)
                streamed.ready.append(call)
                yield ToolCallEvent(model_call_id=model_call_id, call=call, **self.base)
            elif isinstance(chunk, ModelResponse):
                streamed.response = chunk

    def _settle(self, info: PrepareInfo, streamed: _Streamed) -> ModelResponse:
        """The streamed response with its call ids settled, shown to the preparer."""
        agent = self.agent
        response = streamed.response
        if response is None:
            raise ModelError(f"model {agent.model.name!r} ended its stream without a response")
        settled = streamed.ids.message(response.message)
        if settled is not response.message:
            response = dataclasses.replace(response, message=settled)
        observe = getattr(agent.prepare, "after_response", None)
        if observe is not None:
            observe(info, response)
        role = response.message.role
        if role != "assistant":
            raise ModelError(f"model returned a {role!r} message, expected 'assistant'")
        return response

    async def _model_end(self, model_call: ModelCall) -> AsyncIterator[Event | ModelResponse]:
        """The answer with its metadata, its cost counted; the capabilities hear of it."""
        agent = self.agent
        model_call_id = model_call.model_call_id
        response = model_call.response
        assert response is not None
        message = response.message
        metadata = {**message.metadata, "model_call_id": model_call_id, "model": agent.model.name}
        if response.usage is not None:  # kept in the log with the answer (``inspect`` shows it)
            metadata[USAGE_KEY] = dataclasses.asdict(response.usage)
        message = message.replace(metadata=metadata)
        response = ModelResponse(
            message=message,
            usage=response.usage,
            stop_reason=response.stop_reason,
            model=response.model,
        )
        cost = self.meter.add(
            response.usage,
            (response.model, agent.model.name),
            getattr(agent.model, "provider_name", None),
        )
        await self._model_done(
            ModelCall(model_call_id, model_call.iteration, model_call.request, response)
        )
        yield ModelCallEndEvent(
            model_call_id=model_call_id,
            message=message,
            usage=response.usage,
            stop_reason=response.stop_reason,
            cost_usd=cost,
            **self.base,
        )
        yield response

    async def _call_instructions(self) -> tuple[Material, ...]:
        """The capabilities' instructions for this call: asked at its first model request,
        the same for the rest of the call."""
        if not self.caps.call_instructions:
            return ()
        found: tuple[Material, ...] | None = self.run_cache.get(_CALL_INSTRUCTIONS)
        if found is None:
            found = await self.caps.run_call_instructions(self.call)
            self.run_cache[_CALL_INSTRUCTIONS] = found
        return found

    async def _model_done(self, model_call: ModelCall) -> None:
        """The capabilities hear how a model request went (a failing hook does not hide the
        request's own error)."""
        if not self.caps.after_model_request:
            return
        if model_call.error is None:
            await self.caps.run_after_model_request(self.call, model_call)
            return
        try:
            await self.caps.run_after_model_request(self.call, model_call)
        except Exception:
            logger.exception("after_model_request failed while reporting a failed request")

    def _retry_event(self, model_call_id: str, notice: RetryNotice) -> CustomEvent:
        data = {
            "model_call_id": model_call_id,
            "model": self.agent.model.name,
            "attempt": notice.attempt,
            "max_attempts": notice.max_attempts,
            "wait_seconds": round(notice.wait, 3),
            "status_code": notice.status_code,
            "error": notice.error,
        }
        self.record("custom", {"name": "model_retry", "data": data})
        return CustomEvent(name="model_retry", data=data, **self.base)

    async def _next_chunk(
        self, stream: AsyncIterator[ModelEvent], stop: asyncio.Future[Any] | None
    ) -> ModelEvent | None:
        """The stream's next chunk (``None`` at its end); an interrupt (``stop``) wins.

        An interrupt that comes while the stream is waiting cancels the wait (as
        :func:`asyncio.timeout` does), so a chunk costs no task of its own."""
        if stop is None:
            return await anext(stream, None)
        if stop.done():
            raise Interrupted
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()  # cancels asked before this wait are not ours
        waiting = True
        cut = False

        def interrupt(_: object) -> None:
            nonlocal cut
            if waiting:  # not after the chunk came: the callback runs a pass later
                cut = True
                task.cancel()

        stop.add_done_callback(interrupt)
        try:
            chunk = await anext(stream, None)
        except (Exception, asyncio.CancelledError) as exc:
            if not cut:
                raise
            waiting = False
            if task.uncancel() > cancelling and isinstance(exc, asyncio.CancelledError):
                raise  # cancelled from outside as well: that wins
            raise Interrupted from exc  # our cancel (or the stream's error for it)
        finally:
            waiting = False
            stop.remove_done_callback(interrupt)
        if cut:  # the stream swallowed the cancel and went on: the interrupt still wins
            task.uncancel()
            raise Interrupted
        return chunk

    def _save_partial(self, model_call_id: str, text: str, calls: list[ToolUseBlock]) -> None:
        """Keep what the model streamed before the interrupt: its text so far, and its
        complete tool calls, each with an interrupted result (they never ran)."""
        blocks: list[ContentBlock] = [TextBlock(text)] if text.strip() else []
        blocks.extend(calls)
        if not blocks:
            return
        message = Msg.assistant(
            blocks,
            metadata={
                "model_call_id": model_call_id,
                "model": self.agent.model.name,
                "interrupted": True,
            },
        )
        self.partial = message
        self._append_interrupted(message, calls)

    async def _prepare(self, info: PrepareInfo, out: list[ModelRequest]) -> AsyncIterator[Event]:
        """Prepare the request, yielding the events it emits while it runs (a summary made
        for compaction can take a while; a UI should see ``compaction_start`` meanwhile)."""
        draft = self.agent.draft_request(self.state, info.model_call_id)
        if self.caps.filter_tools:
            offered = self.caps.run_filter_tools(self.call, draft.tools)
            if offered is not draft.tools:
                draft = dataclasses.replace(draft, tools=offered)
        shape = getattr(self, "_shape", None)  # the typed final answer (OutputSteps)
        if shape is not None:  # before the context is compiled: its schema counts too
            draft = shape(draft)
        async for event in self._pump(self.agent.prepare(self.state, draft, info), out):
            yield event
        if shape is not None:  # kept when a capability's prepare rebuilt the request
            out[0] = shape(out[0])
