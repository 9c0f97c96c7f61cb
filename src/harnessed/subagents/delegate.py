"""Delegate: what the sub-agents capability needs of an agent (a parent or a sub-agent).

:class:`~harnessed.HarnessAgent` is one. The capability never imports the agent module (nothing
below the agent does): a sub-agent declared by a spec is built with the parent's own class.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, TypeVar

from harnessed.capabilities.base import Capability
from harnessed.capabilities.registry import CapabilitySet
from harnessed.events import Event
from harnessed.log.store import SessionLogStore
from harnessed.models.base import Model
from harnessed.permissions.flow import ConfirmationMode
from harnessed.permissions.gate import ApprovalGate
from harnessed.run.inputs import AgentInput
from harnessed.runtime import RuntimeContext
from harnessed.state.agent_state import AgentState
from harnessed.state.editor import Change
from harnessed.state.store import AgentStateStore
from harnessed.tools.toolkit import ToolGuard, Toolkit
from harnessed.workspace.layout import Workspace

__all__ = ["Delegate", "is_agent"]

C = TypeVar("C", bound=Capability)


class Delegate(Protocol):
    """An agent that can run tasks as a sub-agent, or spawn them as a parent."""

    @property
    def name(self) -> str: ...
    @property
    def model(self) -> Model: ...
    @property
    def sys_prompt(self) -> str: ...
    @property
    def workspace(self) -> Workspace | None: ...
    @property
    def state_store(self) -> AgentStateStore: ...
    @property
    def session_store(self) -> SessionLogStore: ...
    @property
    def toolkit(self) -> Toolkit: ...
    @property
    def capabilities(self) -> CapabilitySet: ...
    @property
    def max_iters(self) -> int: ...
    @property
    def max_output_tokens(self) -> int | None: ...
    @property
    def tool_guard(self) -> ToolGuard | None: ...
    @property
    def approval_gate(self) -> ApprovalGate: ...

    def stream_events(
        self,
        input: AgentInput,
        ctx: RuntimeContext | None = None,
        *,
        confirmations: ConfirmationMode = "wait",
    ) -> AsyncIterator[Event]: ...

    async def respond(
        self,
        ctx: RuntimeContext | None,
        request_id: str,
        approved: bool,
        *,
        feedback: str | None = None,
        answer: Any = ...,
    ) -> None: ...

    async def read_state(self, ctx: RuntimeContext | None) -> AgentState: ...

    async def change_state(self, ctx: RuntimeContext | None, change: Change) -> AgentState: ...

    def capability(self, kind: type[C]) -> C | None: ...

    def clone(
        self, *, features: bool = True, shared_stores: bool = False, **changes: Any
    ) -> Delegate:
        """A new agent like this one (the sub-agents' children: ``features=False``,
        ``shared_stores=True``)."""
        ...


def is_agent(value: object) -> bool:
    """Whether ``value`` is an agent: it has the members of :class:`Delegate` (a
    :class:`~harnessed.HarnessAgent` has). Checked by shape, so that sub-agents never import
    the agent they run under."""
    return not isinstance(value, type) and all(
        callable(getattr(value, member, None)) for member in _DELEGATE_MEMBERS
    )


_DELEGATE_MEMBERS = ("stream_events", "read_state", "change_state", "capability")
