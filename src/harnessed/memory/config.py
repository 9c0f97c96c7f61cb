"""``MemoryConfig``: when facts are extracted, how memory is consolidated and kept tidy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from harnessed.models.base import Model

__all__ = ["FlushThrottle", "MemoryConfig"]

FlushThrottle: TypeAlias = Literal["always", "never"] | float
"""``"always"``, ``"never"``, or a number of minutes: at most one flush per session that often."""


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Long-term memory of an agent with a workspace (BEHAVIOUR.md §4).

    Two layers live in the workspace, placed by its isolation scope: an append-only daily
    ledger ``memory/YYYY-MM-DD.md`` that flushes write to, and a curated ``MEMORY.md`` that
    consolidation rewrites from the ledger and every request shows the model.
    """

    flush_before_compaction: bool = True
    """Extract durable facts from the messages compaction is about to summarize (awaited
    before the summary is made)."""
    flush_after_call: FlushThrottle = "never"
    """Extract facts after each call, in the background: ``"always"``, ``"never"`` (the
    default, since each flush is a model call) or a number of minutes (at most one flush per
    session per that many minutes)."""
    model: Model | str | None = None
    """The model for flushes and consolidation (default: the agent's model)."""
    flush_window_tokens: int = 12_000
    """The newest messages up to this many tokens are shown to a flush."""
    known_memory_tokens: int = 4_000
    """How much of ``MEMORY.md`` and of today's ledger a flush is shown, each."""
    max_output_tokens: int = 1_024
    """Output limit of a flush request."""
    consolidate: bool = True
    """Merge new ledger entries into ``MEMORY.md`` during maintenance."""
    memory_max_tokens: int = 4_000
    """The most tokens a consolidated ``MEMORY.md`` may have."""
    maintenance_interval_minutes: float | None = 30.0
    """Run maintenance (archive, then consolidate) after a call at most this often per memory
    directory; ``None`` runs it only when asked (``agent.memory.maintain(...)``)."""
    archive_after_days: int = 90
    """Ledgers older than this many days move to ``memory/archive/``."""
    memory_versions_kept: int = 30
    """How many previous versions of ``MEMORY.md`` consolidation keeps in ``memory/archive/``
    (each consolidation that changes the file keeps the text it replaced)."""
    timezone: str | None = None
    """IANA time zone that decides which day's ledger is written (default: the system's)."""

    def __post_init__(self) -> None:
        if not isinstance(self.flush_before_compaction, bool):
            raise TypeError("MemoryConfig.flush_before_compaction must be a bool")
        if not isinstance(self.consolidate, bool):
            raise TypeError("MemoryConfig.consolidate must be a bool")
        throttle = self.flush_after_call
        if isinstance(throttle, str):
            if throttle not in ("always", "never"):
                raise ValueError(
                    "MemoryConfig.flush_after_call must be 'always', 'never' or a number of "
                    f"minutes, got {throttle!r}"
                )
        elif isinstance(throttle, bool) or not isinstance(throttle, int | float) or throttle <= 0:
            raise ValueError(
                "MemoryConfig.flush_after_call must be 'always', 'never' or a positive number "
                f"of minutes, got {throttle!r}"
            )
        if self.model is not None and not isinstance(self.model, str | Model):
            raise TypeError(
                f"MemoryConfig.model must be a Model, a 'provider:model' string or None, "
                f"got {type(self.model).__name__}"
            )
        for name, minimum in (
            ("flush_window_tokens", 100),
            ("known_memory_tokens", 0),
            ("max_output_tokens", 16),
            ("memory_max_tokens", 100),
            ("archive_after_days", 1),
            ("memory_versions_kept", 1),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"MemoryConfig.{name} must be an int >= {minimum}, got {value!r}")
        interval = self.maintenance_interval_minutes
        if interval is not None and (
            isinstance(interval, bool) or not isinstance(interval, int | float) or interval < 0
        ):
            raise ValueError(
                "MemoryConfig.maintenance_interval_minutes must be a number >= 0 or None, "
                f"got {interval!r}"
            )
        if self.timezone is not None:
            try:
                ZoneInfo(self.timezone)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise ValueError(
                    f"MemoryConfig.timezone {self.timezone!r} is not a known IANA time zone"
                ) from exc

    @property
    def flush_interval_seconds(self) -> float | None:
        """Seconds between end-of-call flushes of a session (0 = every call, None = never)."""
        if self.flush_after_call == "never":
            return None
        if self.flush_after_call == "always":
            return 0.0
        return float(self.flush_after_call) * 60.0
