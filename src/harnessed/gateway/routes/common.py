"""Documented answers shared by the HTTP channel's routes."""

from __future__ import annotations

from typing import Any

from harnessed.gateway.schemas import Problem

__all__ = ["NOT_FOUND", "SSE"]

SSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The turn's events as server-sent events, from `turn` to `agent_end`.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
    404: {"model": Problem, "description": "No such session for this user."},
    409: {"model": Problem, "description": "The session is busy, or the key was reused."},
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "No such session for this user."}
}
