"""What the run loop needs of its agent, and the small pieces its parts share."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Protocol

from harnessed.capabilities.registry import CapabilitySet
from harnessed.capabilities.seam import RequestPreparer
from harnessed.compaction.config import CompactionConfig
from harnessed.log.record import RecordType
from harnessed.log.store import SessionLogStore
from harnessed.messages import Msg, ToolResultBlock
from harnessed.models.base import Model, ModelEvent, ModelRequest
from harnessed.run.approvals import Approvals
from harnessed.state.agent_state import AgentState
from harnessed.state.conversation import ConversationStore
from harnessed.state.store import AgentStateStore
from harnessed.tools.toolkit import ToolGuard, Toolkit
from harnessed.workspace.layout import Workspace

__all__ = [
    "MODE_KEY",
    "HARNESS_RECORDS",
    "Interrupted",
    "LoopHost",
    "close_stream",
    "quietly",
    "result_msg",
]

MODE_KEY = "harnessed.confirmations"
"""The key of the call's confirmation mode (``wait`` or ``park``) in ``CallContext.values``."""

# Custom events the harness itself emits, and the session log record type of each.
HARNESS_RECORDS = {
    "context_build": RecordType.CONTEXT_BUILD,
    "compaction_start": RecordType.COMPACTION_START,
    "compaction_end": RecordType.COMPACTION_END,
    "task_changed": RecordType.TASK_CHANGED,
    "plan_changed": RecordType.PLAN_CHANGED,
    "permission_changed": RecordType.PERMISSION_CHANGED,
    "memory_flush": RecordType.MEMORY_FLUSH,
}


class LoopHost(Protocol):
    """What the loop needs of its agent (:class:`~harnessed.HarnessAgent` is one)."""

    name: str
    model: Model
    max_iters: int
    compaction: CompactionConfig | None
    tool_guard: ToolGuard | None
    toolkit: Toolkit
    workspace: Workspace | None
    state_store: AgentStateStore
    conversation: ConversationStore
    capabilities: CapabilitySet
    prepare: RequestPreparer

    @property
    def session_store(self) -> SessionLogStore: ...

    @property
    def approvals(self) -> Approvals:
        """Asks before tools run (the permissions capability): passed into every run."""
        ...

    def draft_request(self, state: AgentState, model_call_id: str) -> ModelRequest: ...


class Interrupted(Exception):
    """Raised inside a run when its :class:`TurnControl` asked it to stop (at a safe point)."""


async def quietly(task: Awaitable[Any]) -> None:
    with contextlib.suppress(BaseException):  # the step was cancelled on purpose
        await task


async def close_stream(stream: AsyncIterator[ModelEvent]) -> None:
    closer = getattr(stream, "aclose", None)
    if closer is not None:
        with contextlib.suppress(Exception):
            await closer()


def result_msg(result: ToolResultBlock) -> Msg:
    return Msg("tool", (result,), name=result.name)
