"""``agent.session(ctx)`` and the agent's turn gate: part of :class:`~harnessed.HarnessAgent`
(a mixin, with the session log queries)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from harnessed.runtime import RuntimeContext
from harnessed.session.queries import SessionQueries

if TYPE_CHECKING:
    from harnessed.sessions.gate import TurnGate
    from harnessed.sessions.host import SessionHost
    from harnessed.sessions.session import AgentSession
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
            from harnessed.sessions.gate import default_turn_gate  # imported on first use

            root = self.workspace.local_root if self.workspace is not None else None
            self._turn_gate = default_turn_gate(root)
        return self._turn_gate

    @turn_gate.setter
    def turn_gate(self, gate: TurnGate) -> None:
        self._turn_gate = gate

    def session(self, ctx: RuntimeContext | None = None) -> AgentSession:
        """The steerable session of ``ctx`` (the same object for every caller while it is in
        use): submit turns, steer or interrupt the running one, resume, follow events."""
        from harnessed.sessions.session import open_session  # imported on first use

        return open_session(cast("SessionHost", self), ctx)
