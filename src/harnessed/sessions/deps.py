"""What sessions and channels need of an agent (:class:`~harnessed.HarnessAgent` is one).

Sessions sit above the agent: they drive it through this protocol and never import it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from harnessed.events import Event
from harnessed.log.record import SessionRecord
from harnessed.log.store import SessionInfo, SessionLogStore
from harnessed.messages import Msg
from harnessed.models.usage import UsageTotals
from harnessed.permissions.flow import ConfirmationMode
from harnessed.run.inputs import AgentInput
from harnessed.runtime import RuntimeContext
from harnessed.state.parked import PendingConfirmation
from harnessed.turns.control import TurnControl
from harnessed.turns.gate import TurnGate

if TYPE_CHECKING:
    from harnessed.compaction.manual import CompactionReport
    from harnessed.sessions.session import AgentSession

__all__ = ["SessionHost"]


@runtime_checkable
class SessionHost(Protocol):
    """An agent that sessions can run turns on."""

    name: str
    turn_gate: TurnGate

    @property
    def session_store(self) -> SessionLogStore: ...

    def stream_events(
        self,
        input: AgentInput,
        ctx: RuntimeContext | None = None,
        *,
        confirmations: ConfirmationMode = "wait",
        control: TurnControl | None = None,
    ) -> AsyncIterator[Event]: ...

    def session(self, ctx: RuntimeContext | None = None) -> AgentSession: ...

    async def respond(
        self,
        ctx: RuntimeContext | None,
        request_id: str,
        approved: bool,
        *,
        feedback: str | None = None,
    ) -> None: ...

    async def pending_confirmations(
        self, ctx: RuntimeContext | None = None
    ) -> list[PendingConfirmation]: ...

    async def session_log(
        self,
        ctx: RuntimeContext | None = None,
        *,
        types: Sequence[str] | None = None,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[SessionRecord]: ...

    async def session_messages(self, ctx: RuntimeContext | None = None) -> list[Msg]: ...

    async def session_usage(self, ctx: RuntimeContext | None = None) -> UsageTotals: ...

    async def sessions(self, user_id: str = "default") -> list[SessionInfo]: ...

    async def compact(self, ctx: RuntimeContext | None = None) -> CompactionReport: ...
