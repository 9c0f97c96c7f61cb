"""Sessions you can steer: :class:`AgentSession` (submit, steer, interrupt, resume, events,
respond) and the turn gate that keeps one turn per session running at a time."""

from typing import TYPE_CHECKING

from harnessed._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessed.agent_sessions import SessionAccess
    from harnessed.sessions.session import (
        AgentSession,
        IdempotencyConflictError,
        NothingToResumeError,
        SessionIdleError,
        TurnSlots,
        open_session,
    )
    from harnessed.sessions.turn import Turn, TurnStatus
    from harnessed.stores.local.turn_gate import FileTurnGate, default_turn_gate
    from harnessed.turns.control import TurnControl
    from harnessed.turns.gate import (
        InMemoryTurnGate,
        LeaseLostError,
        SessionBusyError,
        TurnGate,
        TurnLease,
    )
    from harnessed.turns.notes import NOTE_POLL_SECONDS, Delivery, TurnNotes

__all__ = [
    "NOTE_POLL_SECONDS",
    "AgentSession",
    "Delivery",
    "SessionAccess",
    "FileTurnGate",
    "IdempotencyConflictError",
    "InMemoryTurnGate",
    "LeaseLostError",
    "NothingToResumeError",
    "SessionBusyError",
    "SessionIdleError",
    "Turn",
    "TurnControl",
    "TurnGate",
    "TurnLease",
    "TurnNotes",
    "TurnSlots",
    "TurnStatus",
    "default_turn_gate",
    "open_session",
]

_LAZY = {
    "NOTE_POLL_SECONDS": "harnessed.turns.notes",
    "AgentSession": "harnessed.sessions.session",
    "Delivery": "harnessed.turns.notes",
    "FileTurnGate": "harnessed.stores.local.turn_gate",
    "IdempotencyConflictError": "harnessed.sessions.session",
    "InMemoryTurnGate": "harnessed.turns.gate",
    "LeaseLostError": "harnessed.turns.gate",
    "NothingToResumeError": "harnessed.sessions.session",
    "SessionAccess": "harnessed.agent_sessions",
    "SessionBusyError": "harnessed.turns.gate",
    "SessionIdleError": "harnessed.sessions.session",
    "Turn": "harnessed.sessions.turn",
    "TurnControl": "harnessed.turns.control",
    "TurnGate": "harnessed.turns.gate",
    "TurnLease": "harnessed.turns.gate",
    "TurnNotes": "harnessed.turns.notes",
    "TurnSlots": "harnessed.sessions.session",
    "TurnStatus": "harnessed.sessions.turn",
    "default_turn_gate": "harnessed.stores.local.turn_gate",
    "open_session": "harnessed.sessions.session",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
