"""Long-term memory as a capability: the memory tools, and flushes and maintenance after calls.

Compaction asks the agent's memory flusher (this capability's manager, unless the application
set another) to save durable facts before a summary replaces them; after each call that ends
normally the manager decides in the background whether to flush or maintain memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.capabilities.base import CallContext, CallEnd, Capability, CapabilityHost
from harnessed.cost.meter import METER_KEY, UsageMeter
from harnessed.memory.auxiliary import AuxiliaryModel
from harnessed.memory.config import MemoryConfig
from harnessed.memory.manager import MemoryManager
from harnessed.memory.tools import memory_tools
from harnessed.models.registry import resolve_model
from harnessed.tools.base import Tool

__all__ = ["Memory"]

_SETTLED = ("completed", "max_iters", "limit", "pending", "stopped")


class Memory(Capability):
    """``MEMORY.md`` and the daily ledgers of the workspace (needs a workspace).

    Args:
        config: :class:`MemoryConfig` (defaults when ``None``).
        tools: Give the model ``memory_search``, ``memory_get`` and ``memory_save``.
    """

    name = "memory"

    def __init__(self, config: MemoryConfig | None = None, *, tools: bool = True) -> None:
        if config is not None and not isinstance(config, MemoryConfig):
            raise TypeError(f"memory must be a MemoryConfig, True or False, got {config!r}")
        self.config = config or MemoryConfig()
        self.with_tools = tools
        self._manager: MemoryManager | None = None

    def setup(self, host: CapabilityHost) -> None:
        if host.workspace is None:
            raise ValueError("memory needs a workspace: pass workspace=... to HarnessAgent")
        config = self.config
        model = resolve_model(config.model) if config.model is not None else host.model
        self._manager = MemoryManager(
            host.workspace,
            agent_name=host.agent_name,
            aux=AuxiliaryModel(host.agent_name, model, host.preparer),
            config=config,
            session_store=host.session_store,
            estimator=host.estimator,
        )

    @property
    def manager(self) -> MemoryManager:
        if self._manager is None:
            raise RuntimeError("the memory capability is not set up (pass it to HarnessAgent)")
        return self._manager

    def tools(self) -> Sequence[Tool]:
        if not self.with_tools:
            return ()
        return memory_tools(self.manager)

    async def after_call(self, call: CallContext, end: CallEnd) -> None:
        if end.error is None and end.status in _SETTLED:
            meter = call.values.get(METER_KEY)
            usage = meter if isinstance(meter, UsageMeter) else None
            self.manager.after_call(call.runtime, call.state.history, usage)

    async def close(self) -> None:
        await self.manager.wait_idle()
