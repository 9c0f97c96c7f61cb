"""``call`` and ``call_sync``: a call run to its end, summed up as a :class:`RunResult`
(a part of :class:`~harnessed.HarnessAgent`, which forwards both)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from harnessed.cost.limits import DEFAULT, Unset, UsageLimits
from harnessed.output.result import RunResult, collect_result, run_blocking
from harnessed.output.spec import output_spec
from harnessed.run.inputs import AgentInput
from harnessed.runtime import RuntimeContext

if TYPE_CHECKING:
    from harnessed.events import Event
    from harnessed.memory.manager import MemoryManager
    from harnessed.output.spec import OutputSpec
    from harnessed.permissions.flow import ConfirmationMode

__all__ = ["ResultCalls"]


class StreamingAgent(Protocol):
    """What the calls need of the agent (:class:`~harnessed.HarnessAgent` is one)."""

    output: OutputSpec[Any] | None
    output_retries: int

    @property
    def memory(self) -> MemoryManager | None: ...

    def stream_events(
        self,
        input: AgentInput,
        ctx: RuntimeContext | None = None,
        *,
        confirmations: ConfirmationMode = "wait",
        usage_limits: UsageLimits | Unset | None = DEFAULT,
        session_usage_limits: UsageLimits | Unset | None = DEFAULT,
        output_type: Any = None,
    ) -> AsyncIterator[Event]: ...


class ResultCalls:
    """The agent's ``call`` / ``call_sync``: its ``stream_events``, collected."""

    def __init__(self, agent: StreamingAgent) -> None:
        self._agent = agent

    async def call(
        self,
        input: AgentInput,
        ctx: RuntimeContext | None = None,
        *,
        output_type: Any = None,
        usage_limits: UsageLimits | Unset | None = DEFAULT,
        session_usage_limits: UsageLimits | Unset | None = DEFAULT,
    ) -> RunResult[Any]:
        """Run the agent on ``input`` and return its :class:`~harnessed.output.RunResult`:
        the reply (``result.text``), the typed ``output``, how the call ended (``status``),
        usage, steps and the turn's id.

        ``output_type`` overrides the agent's for this call; ``usage_limits`` /
        ``session_usage_limits`` replace the agent's (``None``: no limit). A call whose tool
        needs the user's approval, or whose model asks the user a question, ends at once with
        status ``pending`` (answer with ``respond``, then call again without input). Raises
        :class:`~harnessed.output.OutputError` when the typed answer could not be had.
        """
        agent = self._agent
        spec = (
            agent.output if output_type is None else output_spec(output_type, agent.output_retries)
        )
        events = agent.stream_events(
            input,
            ctx,
            confirmations="park",
            output_type=spec or str,
            usage_limits=usage_limits,
            session_usage_limits=session_usage_limits,
        )
        return await collect_result(events, spec)

    def call_sync(
        self,
        input: AgentInput,
        ctx: RuntimeContext | None = None,
        *,
        output_type: Any = None,
        usage_limits: UsageLimits | Unset | None = DEFAULT,
        session_usage_limits: UsageLimits | Unset | None = DEFAULT,
    ) -> RunResult[Any]:
        """Blocking form of :meth:`call` for scripts and notebooks; it also waits for the
        call's background memory work.

        Inside a running event loop (Jupyter) the call runs on a worker thread with an event
        loop of its own while this thread waits — the running loop is blocked meanwhile, so
        prefer ``await agent.call(...)`` there.
        """
        memory = self._agent.memory

        async def settled() -> RunResult[Any]:
            try:
                return await self.call(
                    input,
                    ctx,
                    output_type=output_type,
                    usage_limits=usage_limits,
                    session_usage_limits=session_usage_limits,
                )
            finally:
                if memory is not None:
                    await memory.wait_idle()

        return run_blocking(settled)
