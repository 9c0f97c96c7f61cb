"""Request and response bodies of the HTTP channel (they make the OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harnessed.compaction.manual import CompactionReport
from harnessed.gateway.identity import SESSION_ID_PATTERN
from harnessed.models.usage import UsageTotals

__all__ = [
    "AgentList",
    "AnswerIn",
    "CompactOut",
    "ConfirmationOut",
    "Created",
    "HistoryOut",
    "InterruptOut",
    "MessageIn",
    "Problem",
    "SessionIn",
    "SessionList",
    "SessionOut",
    "SteerIn",
    "SteerOut",
    "UsageOut",
]

MAX_TEXT = 100_000

UsageOut = UsageTotals
"""What a session has spent (its sub-agents included): the library's own totals."""
CompactOut = CompactionReport
"""What a compaction on request did: the library's own report."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionIn(_Body):
    session_id: str | None = Field(
        None,
        pattern=SESSION_ID_PATTERN,
        description="Your own id for the session (default: a new random one).",
    )


class MessageIn(_Body):
    text: str = Field(..., min_length=1, max_length=MAX_TEXT, description="The user's message.")
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Retrying with the same key and text returns the same turn.",
    )
    wait: bool = Field(
        True, description="Queue behind a running turn (true) or fail with 409 (false)."
    )


class SteerIn(_Body):
    text: str = Field(..., min_length=1, max_length=MAX_TEXT)


class AnswerIn(_Body):
    approved: bool
    feedback: str | None = Field(None, max_length=10_000)
    answer: Any = Field(
        None,
        description="The answer to a question (kind 'question'): text, or JSON data matching "
        "the question's schema. Only for questions.",
    )


class SessionOut(BaseModel):
    session_id: str
    agent: str
    updated_at: float | None = None
    running_turn: str | None = None
    usage: UsageOut | None = None
    """Only in the view of one session (``GET /v1/sessions/{id}``)."""


class Created(SessionOut):
    created: bool


class SessionList(BaseModel):
    sessions: list[SessionOut]


class AgentList(BaseModel):
    agents: list[str]
    default: str


class HistoryOut(BaseModel):
    messages: list[dict[str, Any]]


class SteerOut(BaseModel):
    message_id: str
    turn_id: str | None


class InterruptOut(BaseModel):
    interrupted: bool
    turn_id: str | None


class ConfirmationOut(BaseModel):
    request_id: str
    tool: str
    arguments: dict[str, Any]
    reason: str
    kind: str = Field("confirmation", description="'confirmation' or 'question' (ask_user).")
    details: dict[str, Any] = Field(
        default_factory=dict,
        description="For a question: question, choices and the answer's JSON schema.",
    )


class Problem(BaseModel):
    detail: str
