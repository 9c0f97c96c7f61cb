"""ToolContext: what a running tool may know about its call."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState
from harnessed.workspace.layout import Workspace

if TYPE_CHECKING:
    from harnessed.capabilities.base import CallContext

__all__ = ["ToolContext"]


def _ignore(name: str, data: Mapping[str, Any]) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Handed to a tool that declares a parameter annotated with ``ToolContext``.

    ``state`` is the live working state of the session (tools such as ``todo_write`` change it);
    ``emit(name, data)`` sends a custom event to ``stream_events`` consumers.
    """

    agent_name: str
    runtime: RuntimeContext
    state: AgentState
    call_id: str
    workspace: Workspace | None = None
    emit: Callable[[str, Mapping[str, Any]], None] = field(default=_ignore)
    call: CallContext | None = None
    """The running call as capabilities see it (``call.publish`` forwards events into the
    call's stream); ``None`` when a tool is run outside an agent call."""

    @property
    def user_id(self) -> str:
        return self.runtime.user_id

    @property
    def session_id(self) -> str:
        return self.runtime.session
