"""Sessions you can steer: :class:`AgentSession` (submit, steer, interrupt, resume, events,
respond) and the turn gate that keeps one turn per session running at a time."""

from harnessed.sessions.access import SessionAccess
from harnessed.sessions.control import TurnControl
from harnessed.sessions.gate import (
    FileTurnGate,
    InMemoryTurnGate,
    LeaseLostError,
    SessionBusyError,
    TurnGate,
    TurnLease,
    default_turn_gate,
)
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
    "AgentSession",
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
    "TurnSlots",
    "TurnStatus",
    "default_turn_gate",
    "open_session",
]
