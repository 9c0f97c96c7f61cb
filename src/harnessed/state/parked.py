"""Confirmation requests and the parked step that waits for them.

When a step's calls need the user's approval and nobody answers during the call, the step is
*parked*: the assistant message with its tool calls and the open requests are stored in the
state's ``parked_step`` section (:data:`PARKED`) — not in the history, so the history never
holds a tool call without its result. The next call of the session resumes the step (when
called without input) or closes it with "not run" results (when the user sends a new message
instead).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harnessed._internal.clock import now_iso
from harnessed.messages import Msg, ToolUseBlock, new_id
from harnessed.state.agent_state import AgentState
from harnessed.state.sections import StateSection

__all__ = ["PARKED", "ParkedStep", "PendingConfirmation"]


@dataclass(frozen=True, slots=True)
class PendingConfirmation:
    """One tool call waiting for the user's yes or no."""

    request_id: str
    call: ToolUseBlock
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)
    declined_message: str | None = None
    approved: bool | None = None
    """``None`` while unanswered."""
    feedback: str | None = None
    """What the user said with the answer (passed on to the model when declined)."""
    created_at: str = field(default_factory=now_iso)

    @classmethod
    def new(
        cls,
        call: ToolUseBlock,
        reason: str,
        details: Mapping[str, Any] | None = None,
        declined_message: str | None = None,
    ) -> PendingConfirmation:
        return cls(new_id("perm_"), call, reason, dict(details or {}), declined_message)

    @property
    def answered(self) -> bool:
        return self.approved is not None

    def answer(self, approved: bool, feedback: str | None = None) -> PendingConfirmation:
        return replace(self, approved=approved, feedback=feedback)

    def to_dict(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "call": {"id": self.call.id, "name": self.call.name, "input": dict(self.call.input)},
            "reason": self.reason,
            "details": dict(self.details),
            "declined_message": self.declined_message,
            "approved": self.approved,
            "feedback": self.feedback,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingConfirmation:
        call = data["call"]
        return cls(
            request_id=str(data["request_id"]),
            call=ToolUseBlock(str(call["id"]), str(call["name"]), dict(call.get("input") or {})),
            reason=str(data.get("reason", "")),
            details=dict(data.get("details") or {}),
            declined_message=data.get("declined_message"),
            approved=data.get("approved"),
            feedback=data.get("feedback"),
            created_at=str(data.get("created_at") or now_iso()),
        )


@dataclass(frozen=True, slots=True)
class ParkedStep:
    """An assistant message whose tool calls wait for confirmations."""

    message: Msg
    requests: tuple[PendingConfirmation, ...]
    parked_at: str = field(default_factory=now_iso)

    def request(self, request_id: str) -> PendingConfirmation | None:
        for r in self.requests:
            if r.request_id == request_id:
                return r
        return None

    def for_call(self, call_id: str) -> PendingConfirmation | None:
        for r in self.requests:
            if r.call.id == call_id:
                return r
        return None

    @property
    def open_requests(self) -> list[PendingConfirmation]:
        return [r for r in self.requests if not r.answered]

    def with_answer(
        self, request_id: str, approved: bool, feedback: str | None = None
    ) -> ParkedStep:
        requests = tuple(
            r.answer(approved, feedback) if r.request_id == request_id else r for r in self.requests
        )
        return replace(self, requests=requests)

    def to_dict(self) -> dict[str, Any]:
        return {
            "message": self.message.to_dict(),
            "requests": [r.to_dict() for r in self.requests],
            "parked_at": self.parked_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ParkedStep:
        try:
            return cls(
                message=Msg.from_dict(data["message"]),
                requests=tuple(PendingConfirmation.from_dict(r) for r in data["requests"]),
                parked_at=str(data.get("parked_at") or now_iso()),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(
                f"the parked step in the session's state is malformed: {exc}"
            ) from None

    # ------------------------------------------------------------ in the state
    @staticmethod
    def of(state: AgentState) -> ParkedStep | None:
        """The step of ``state`` waiting for answers, if any."""
        return state.get(PARKED)

    def park(self, state: AgentState) -> None:
        """Make this step the one of ``state`` that waits for answers."""
        state.put(PARKED, self)

    @staticmethod
    def unpark(state: AgentState) -> None:
        """``state`` has no step waiting any more."""
        state.put(PARKED, None)


def _decode(data: Any) -> ParkedStep | None:
    if not isinstance(data, Mapping):
        raise ValueError("the parked step in the session's state is malformed: not an object")
    return ParkedStep.from_dict(data) if data else None


def _encode(step: ParkedStep | None) -> dict[str, Any] | None:
    return step.to_dict() if step is not None else None


PARKED: StateSection[ParkedStep | None] = StateSection(
    "parked_step", decode=_decode, encode=_encode, default=lambda: None
)
"""The step waiting for the user's answers (older states kept it in ``permissions.pending``;
:meth:`AgentState.from_dict` moves it here)."""
