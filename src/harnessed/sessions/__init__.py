"""Sessions you can steer: :class:`AgentSession` (submit, steer, interrupt, resume, events,
respond) and the turn gate that keeps one turn per session running at a time."""

from typing import TYPE_CHECKING

from harnessed.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessed.sessions.access import SessionAccess
    from harnessed.sessions.control import TurnControl
    from harnessed.sessions.file_gate import FileTurnGate, default_turn_gate
    from harnessed.sessions.gate import (
        InMemoryTurnGate,
        LeaseLostError,
        SessionBusyError,
        TurnGate,
        TurnLease,
    )
    from harnessed.sessions.notes import NOTE_POLL_SECONDS, Delivery, TurnNotes
    from harnessed.sessions.session import (
        AgentSession,
        IdempotencyConflictError,
        NothingToResumeError,
        SessionIdleError,
        TurnSlots,
        open_session,
    )
    from harnessed.sessions.turn import Turn, TurnStatus

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
    "NOTE_POLL_SECONDS": "harnessed.sessions.notes",
    "AgentSession": "harnessed.sessions.session",
    "Delivery": "harnessed.sessions.notes",
    "FileTurnGate": "harnessed.sessions.file_gate",
    "IdempotencyConflictError": "harnessed.sessions.session",
    "InMemoryTurnGate": "harnessed.sessions.gate",
    "LeaseLostError": "harnessed.sessions.gate",
    "NothingToResumeError": "harnessed.sessions.session",
    "SessionAccess": "harnessed.sessions.access",
    "SessionBusyError": "harnessed.sessions.gate",
    "SessionIdleError": "harnessed.sessions.session",
    "Turn": "harnessed.sessions.turn",
    "TurnControl": "harnessed.sessions.control",
    "TurnGate": "harnessed.sessions.gate",
    "TurnLease": "harnessed.sessions.gate",
    "TurnNotes": "harnessed.sessions.notes",
    "TurnSlots": "harnessed.sessions.session",
    "TurnStatus": "harnessed.sessions.turn",
    "default_turn_gate": "harnessed.sessions.file_gate",
    "open_session": "harnessed.sessions.session",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
