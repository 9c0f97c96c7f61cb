"""``call`` and ``call_sync``: a call run to its end, summed up as a :class:`RunResult`
(part of :class:`~harnessed.HarnessAgent`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from harnessed.events import Event
from harnessed.inputs import AgentInput
from harnessed.output.result import RunResult, collect_result, run_blocking
from harnessed.output.spec import OutputSpec
from harnessed.runtime import RuntimeContext

if TYPE_CHECKING:
    from harnessed.memory.manager import MemoryManager
    from harnessed.permissions.flow import ConfirmationMode
    from harnessed.sessions.control import TurnControl

__all__ = ["ResultCalls"]


class ResultCalls:
    """The agent's ``call`` / ``call_sync`` (a mixin: it uses ``stream_events``)."""

    output: OutputSpec[Any] | None
    """The agent's default typed final answer (``None``: free text)."""
    output_retries: int

    if TYPE_CHECKING:

        @property
        def memory(self) -> MemoryManager | None: ...

        def stream_events(
            self,
            input: AgentInput,
            ctx: RuntimeContext | None = None,
            *,
            confirmations: ConfirmationMode = "wait",
            control: TurnControl | None = None,
            output_type: Any = None,
        ) -> AsyncIterator[Event]: ...

    async def call(
        self,
        input: AgentInput,
        ctx: RuntimeContext | None = None,
        *,
        output_type: Any = None,
    ) -> RunResult[Any]:
        """Run the agent on ``input`` and return its :class:`~harnessed.output.RunResult`:
        the reply (``result.text``), the typed ``output``, how the call ended (``status``),
        usage, steps and the turn's id.

        ``output_type`` overrides the agent's for this call. A call whose tool needs the
        user's approval, or whose model asks the user a question, ends at once with status
        ``pending`` (answer with ``respond``, then call again without input). Raises
        :class:`~harnessed.output.OutputError` when the typed answer could not be had.
        """
        spec = self._output_spec(output_type) if output_type is not None else self.output
        events = self.stream_events(input, ctx, confirmations="park", output_type=spec or str)
        return await collect_result(events, spec)

    def call_sync(
        self,
        input: AgentInput,
        ctx: RuntimeContext | None = None,
        *,
        output_type: Any = None,
    ) -> RunResult[Any]:
        """Blocking form of :meth:`call` for scripts and notebooks; it also waits for the
        call's background memory work.

        Inside a running event loop (Jupyter) the call runs on a worker thread with an event
        loop of its own while this thread waits — the running loop is blocked meanwhile, so
        prefer ``await agent.call(...)`` there.
        """

        async def settled() -> RunResult[Any]:
            try:
                return await self.call(input, ctx, output_type=output_type)
            finally:
                if self.memory is not None:
                    await self.memory.wait_idle()

        return run_blocking(settled)

    def _output_spec(self, output_type: Any) -> OutputSpec[Any] | None:
        """``output_type`` as a spec (``None`` and ``str``: free text)."""
        if output_type is None or output_type is str:
            return None
        if isinstance(output_type, OutputSpec):
            return output_type
        try:
            return _SPECS[(output_type, self.output_retries)]
        except TypeError:  # an unhashable type: built each time
            return OutputSpec(output_type, retries=self.output_retries)
        except KeyError:
            pass
        spec: OutputSpec[Any] = OutputSpec(output_type, retries=self.output_retries)
        if len(_SPECS) >= _SPECS_KEPT:
            _SPECS.pop(next(iter(_SPECS)))
        _SPECS[(output_type, self.output_retries)] = spec
        return spec


_SPECS: dict[tuple[Any, int], OutputSpec[Any]] = {}
"""Specs made for per-call output types (a schema costs ~1.5 ms to build), oldest first."""
_SPECS_KEPT = 256
