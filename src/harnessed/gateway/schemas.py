"""Request and response bodies of the HTTP channel (they make the OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harnessed.gateway.identity import SESSION_ID_PATTERN

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


class UsageOut(BaseModel):
    """What a session has spent (its sub-agents included); ``cost_usd`` is ``None`` when no
    request had a known price, ``unpriced_requests`` counts those without one."""

    requests: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
    unpriced_requests: int


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


class CompactOut(BaseModel):
    """What a compaction on request did (``status``: compacted, unchanged or failed)."""

    status: str
    summarized_messages: int
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    note: str = ""
    error: str | None = None


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
