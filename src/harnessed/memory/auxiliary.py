"""Auxiliary model calls for memory: prepared as ``summary`` requests, then sent.

They go through the agent's request preparer (the context compiler) with purpose
``"summary"``, so they get the agent's instructions and nothing else — no sources, no workspace
references, no task state — and their ``context/build`` manifest is reported like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from harnessed.capabilities.seam import PrepareInfo, RequestPreparer
from harnessed.messages import Msg, new_id
from harnessed.models.base import Model, ModelRequest, collect
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.state.agent_state import AgentState

__all__ = ["AuxiliaryModel", "Emit"]

Emit = Callable[[str, Mapping[str, Any]], None]


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
        return response.message.text
