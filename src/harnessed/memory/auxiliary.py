"""Auxiliary model calls for memory: prepared as ``summary`` requests, then sent.

They go through the agent's request preparer (the context compiler) with purpose
``"summary"``, so they get the agent's instructions and nothing else — no sources, no workspace
references, no task state — and their ``context/build`` manifest is reported like any other.

What they spend is counted for the call they are made for: the usage sink of its
``run_cache`` (a flush before compaction, during the call), or the one :func:`counting` set for
work after the call (the end-of-call flush and maintenance, in the background).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from harnessed.capabilities.seam import USAGE_SINK, PrepareInfo, RequestPreparer
from harnessed.messages import Msg, new_id
from harnessed.models.base import Model, ModelRequest, collect
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.state.agent_state import AgentState

__all__ = ["AuxiliaryModel", "Emit", "counting"]

Emit = Callable[[str, Mapping[str, Any]], None]

_SINK: ContextVar[Callable[..., Any] | None] = ContextVar("memory_usage_sink", default=None)


@contextmanager
def counting(sink: Callable[..., Any] | None) -> Iterator[None]:
    """Memory requests made inside count with ``sink`` (a call meter's ``add``) unless their
    ``run_cache`` has a sink of its own."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


@dataclass(frozen=True, slots=True)
class AuxiliaryModel:
    """Sends memory requests for one agent."""

    agent_name: str
    model: Model
    prepare: RequestPreparer

    async def ask(
        self,
        runtime: RuntimeContext,
        instructions: str,
        prompt: str,
        *,
        max_output_tokens: int,
        emit: Emit,
        run_cache: MutableMapping[str, Any] | None = None,
    ) -> str:
        """The text of the model's answer to ``prompt`` under ``instructions``."""
        call_id = new_id("mc_")
        request = ModelRequest(
            messages=(Msg.system(instructions), Msg.user(prompt)),
            max_output_tokens=max_output_tokens,
            purpose="summary",
            call_id=call_id,
        )
        info = PrepareInfo(
            agent_name=self.agent_name,
            runtime=runtime,
            model=self.model,
            model_call_id=call_id,
            iteration=0,
            purpose="summary",
            emit=emit,
            run_cache=run_cache if run_cache is not None else {},
        )
        # A summary request never reads or changes the session's state: a blank one will do.
        state = AgentState.new(SessionRef(self.agent_name, runtime.user_id, runtime.session))
        prepared = await self.prepare(state, request, info)
        response = await collect(self.model, prepared)
        count = (run_cache or {}).get(USAGE_SINK) or _SINK.get()
        if callable(count):
            model = self.model
            count(
                response.usage, (response.model, model.name), getattr(model, "provider_name", None)
            )
        return response.message.text
