"""The library's one clock: timestamps as ISO 8601 text in UTC."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["now_iso"]


def now_iso() -> str:
    """The current time in UTC as ISO 8601 text (``2026-12-02T01:30:00.123456+00:00``)."""
    return datetime.now(UTC).isoformat()
