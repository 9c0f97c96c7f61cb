"""``agent.session(ctx)`` and the agent's turn gate: part of :class:`~harnessed.HarnessAgent`
(a mixin, with the session log queries)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from harnessed.runtime import RuntimeContext
from harnessed.session.queries import SessionQueries
from harnessed.sessions.gate import TurnGate, default_turn_gate
from harnessed.sessions.session import AgentSession, open_session

if TYPE_CHECKING:
    from harnessed.sessions.host import SessionHost
    from harnessed.workspace import Workspace

__all__ = ["SessionAccess"]


class SessionAccess(SessionQueries):
    """Steerable sessions of an agent, besides reading their logs."""

    workspace: Workspace | None
    _turn_gate: TurnGate | None = None

    @property
    def turn_gate(self) -> TurnGate:
        """Keeps one turn per session running at a time, across processes. Default: lease
        files under ``<workspace>/.harnessed/turns`` for a local workspace (every process
        using it agrees), else leases in this process. Assign another before the first turn
        (a shared deployment's gate, or ``FileTurnGate(path, lease_seconds=...)``)."""
        if self._turn_gate is None:
            root = self.workspace.local_root if self.workspace is not None else None
            self._turn_gate = default_turn_gate(root)
        return self._turn_gate

    @turn_gate.setter
    def turn_gate(self, gate: TurnGate) -> None:
        self._turn_gate = gate

    def session(self, ctx: RuntimeContext | None = None) -> AgentSession:
        """The steerable session of ``ctx`` (the same object for every caller while it is in
        use): submit turns, steer or interrupt the running one, resume, follow events."""
        return open_session(cast("SessionHost", self), ctx)
