"""``agent.session(ctx)`` and the agent's turn gate: a part of :class:`~harnessed.HarnessAgent`."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, cast

from harnessed.runtime import RuntimeContext, SessionRef

if TYPE_CHECKING:
    from harnessed.sessions.deps import SessionHost
    from harnessed.sessions.session import AgentSession
    from harnessed.turns.control import TurnControl
    from harnessed.turns.gate import TurnGate
    from harnessed.workspace import Workspace

__all__ = ["SessionAccess"]

logger = logging.getLogger(__name__)


class SessionAccess:
    """Steerable sessions of an agent and the turn gate they share."""

    def __init__(self, agent: object, name: str, workspace: Workspace | None) -> None:
        self._agent = agent  # a SessionHost (HarnessAgent is one); sessions drive it
        self.name = name
        self.workspace = workspace
        self._turn_gate: TurnGate | None = None

    @property
    def turn_gate(self) -> TurnGate:
        """Keeps one turn per session running at a time, across processes. Default: lease
        files under ``<workspace>/.harnessed/turns`` for a local workspace (every process
        using it agrees), else leases in this process. Assign another before the first turn
        (a shared deployment's gate, or ``FileTurnGate(path, lease_seconds=...)``)."""
        if self._turn_gate is None:
            from harnessed.stores.local.turn_gate import default_turn_gate  # imported on first use

            root = self.workspace.data_root if self.workspace is not None else None
            self._turn_gate = default_turn_gate(root)
        return self._turn_gate

    @turn_gate.setter
    def turn_gate(self, gate: TurnGate) -> None:
        self._turn_gate = gate

    def session(self, ctx: RuntimeContext | None = None) -> AgentSession:
        """The steerable session of ``ctx`` (the same object for every caller while it is in
        use): submit turns, steer or interrupt the running one, resume, follow events."""
        from harnessed.sessions.session import open_session  # imported on first use

        return open_session(cast("SessionHost", self._agent), ctx)

    @contextlib.asynccontextmanager
    async def call_lease(
        self, ctx: RuntimeContext, control: TurnControl | None
    ) -> AsyncIterator[None]:
        """A plain ``call`` / ``stream_events`` holds the session's turn lease too, so it never
        overlaps a turn of another process (or of an :class:`AgentSession`); a session's turn
        (``control`` given) already holds it."""
        if control is not None:
            yield
            return
        from harnessed.turns.lease import turn_lease  # imported on first use

        def lost() -> None:
            logger.error(
                "agent %r lost the turn lease of session %r of user %r while a call ran "
                "(renewals failed for %.0f s): another process may start a turn of it",
                self.name,
                ctx.session,
                ctx.user_id,
                self.turn_gate.lease_seconds,
            )

        async with turn_lease(self.turn_gate, SessionRef.of(self.name, ctx).token, lost):
            yield
