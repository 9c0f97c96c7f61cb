"""What a wake-up is, its configuration, and when it is due.

A :class:`Wakeup` asks for a turn in one session later: once at a time, once after a delay, or
again and again on a cron spec. :func:`first_due` and :func:`next_cron` turn those into epoch
seconds; cron specs are read by ``cronsim`` (``pip install 'harnessed[wakeups]'``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any

__all__ = [
    "Wakeup",
    "WakeupError",
    "WakeupLimitError",
    "WakeupsConfig",
    "first_due",
    "next_cron",
    "parse_time",
]


class WakeupError(ValueError):
    """A wake-up that cannot be scheduled (the message says why; the model reads it)."""


class WakeupLimitError(WakeupError):
    """The user already has as many wake-ups as :attr:`WakeupsConfig.max_per_user` allows."""


@dataclass(frozen=True, slots=True)
class Wakeup:
    """One scheduled wake-up of one session."""

    id: str
    agent: str
    user_id: str
    session_id: str
    note: str
    """Why the agent wanted to be woken; the woken turn starts with it."""
    due_at: float
    """When it fires next (epoch seconds, UTC)."""
    cron: str | None = None
    """A cron spec: after each firing the wake-up is due again at its next time."""
    created_at: float = 0.0
    fired: int = 0
    """How many times it fired already (a cron wake-up fires many times)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent": self.agent,
            "user_id": self.user_id,
            "session_id": self.session_id,
            "note": self.note,
            "due_at": self.due_at,
            "due": iso(self.due_at),
            "cron": self.cron,
            "created_at": self.created_at,
            "fired": self.fired,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Wakeup:
        """The wake-up :meth:`to_dict` gave (``due`` is left out: ``due_at`` says it)."""
        try:
            cron = data.get("cron")
            return cls(
                id=str(data["id"]),
                agent=str(data["agent"]),
                user_id=str(data["user_id"]),
                session_id=str(data["session_id"]),
                note=str(data["note"]),
                due_at=float(data["due_at"]),
                cron=str(cron) if cron is not None else None,
                created_at=float(data.get("created_at", 0.0)),
                fired=int(data.get("fired", 0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a wake-up: {exc}") from exc

    @property
    def firing_key(self) -> str:
        """The idempotency key of this firing: the same firing never starts two turns, even
        when two processes both think it is theirs."""
        return f"wakeup:{self.id}:{self.fired}"


def _positive(name: str, value: Any, *, integer: bool = False) -> None:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
        raise ValueError(f"WakeupsConfig.{name} must be a positive number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"WakeupsConfig.{name} must be finite, got {value!r}")


@dataclass(frozen=True, slots=True)
class WakeupsConfig:
    """Limits and timing of wake-ups (validated at construction; errors name the field)."""

    max_per_user: int = 20
    """Wake-ups one user may have pending with one agent, over all their sessions."""
    max_note_chars: int = 2_000
    """The longest note a wake-up may carry."""
    min_delay: float = 1.0
    """The earliest a wake-up may fire after it was scheduled (seconds)."""
    max_delay: float = 400 * 86_400.0
    """The latest a wake-up may first fire after it was scheduled (seconds; about 13 months)."""
    min_cron_interval: float = 300.0
    """The shortest gap between two firings of a cron wake-up (seconds): ``* * * * * *``
    cannot wake a session every second."""
    claim_seconds: float = 60.0
    """How long a process that claimed a due wake-up has to start its turn; a process that
    dies holding a claim leaves it to another one after this."""
    poll_seconds: float = 1.0
    """How often a dispatcher looks for due wake-ups (at most; it sleeps less when the next
    one is due sooner)."""
    timezone: str = "UTC"
    """The time zone cron specs and times without an offset are read in (an IANA name)."""
    tz: tzinfo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _positive("max_per_user", self.max_per_user, integer=True)
        _positive("max_note_chars", self.max_note_chars, integer=True)
        _positive("max_delay", self.max_delay)
        _positive("min_cron_interval", self.min_cron_interval)
        _positive("claim_seconds", self.claim_seconds)
        _positive("poll_seconds", self.poll_seconds)
        if isinstance(self.min_delay, bool) or not isinstance(self.min_delay, int | float):
            raise ValueError(f"WakeupsConfig.min_delay must be a number, got {self.min_delay!r}")
        if not 0 <= self.min_delay <= self.max_delay:
            raise ValueError(
                f"WakeupsConfig.min_delay must be between 0 and max_delay, got {self.min_delay!r}"
            )
        object.__setattr__(self, "tz", _zone(self.timezone))


def _zone(name: str) -> tzinfo:
    if name == "UTC":
        return UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ValueError(f"WakeupsConfig.timezone: unknown time zone {name!r}") from None


def iso(epoch: float) -> str:
    """``epoch`` as an ISO-8601 UTC time (the number itself when no calendar holds it)."""
    try:
        return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")
    except (ValueError, OverflowError, OSError):
        return repr(epoch)


def parse_time(at: str | datetime | float, tz: tzinfo = UTC) -> float:
    """``at`` as epoch seconds: an ISO-8601 text or a datetime (without an offset: in ``tz``),
    or epoch seconds."""
    if isinstance(at, bool):
        raise WakeupError(f"at must be a time, got {at!r}")
    if isinstance(at, int | float):
        if not math.isfinite(at):
            raise WakeupError(f"at must be a finite time, got {at!r}")
        return float(at)
    if isinstance(at, str):
        text = at.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            at = datetime.fromisoformat(text)
        except ValueError:
            raise WakeupError(
                f"at must be an ISO-8601 time like 2026-05-01T09:00:00+00:00, got {at!r}"
            ) from None
    if not isinstance(at, datetime):
        raise WakeupError(f"at must be a time, got {at!r}")
    if at.tzinfo is None:
        at = at.replace(tzinfo=tz)
    return at.timestamp()


def next_cron(spec: str, after: float, tz: tzinfo = UTC) -> float:
    """The first time after ``after`` (epoch seconds) that the cron ``spec`` names."""
    try:
        from cronsim import CronSim, CronSimError
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ImportError("cron wake-ups need cronsim: pip install 'harnessed[wakeups]'") from exc
    start = datetime.fromtimestamp(after, tz)
    try:
        return next(CronSim(spec, start)).timestamp()
    except (CronSimError, StopIteration) as exc:
        raise WakeupError(f"cron spec {spec!r} is not valid: {exc}") from None


def check_cron(spec: str, now: float, config: WakeupsConfig) -> float:
    """The first firing of ``spec`` after ``now``, checked against the config's limits."""
    if not isinstance(spec, str) or not spec.strip() or len(spec) > 200:
        raise WakeupError("cron must be a cron spec like '0 9 * * 1-5'")
    first = next_cron(spec, now + config.min_delay, config.tz)
    second = next_cron(spec, first, config.tz)
    if second - first < config.min_cron_interval:
        raise WakeupError(
            f"cron spec {spec!r} fires more often than every {config.min_cron_interval:g} seconds"
        )
    if first - now > config.max_delay:
        raise WakeupError(f"cron spec {spec!r} first fires too far ahead ({iso(first)})")
    return first


def first_due(
    config: WakeupsConfig,
    now: float,
    *,
    at: str | datetime | float | None = None,
    after: float | None = None,
    cron: str | None = None,
) -> float:
    """When a wake-up given by exactly one of ``at``, ``after`` (seconds) or ``cron`` first
    fires; raises :class:`WakeupError` naming the problem."""
    given = [n for n, value in (("at", at), ("after", after), ("cron", cron)) if value is not None]
    if len(given) != 1:
        raise WakeupError("give exactly one of at (a time), after (seconds) or cron (a spec)")
    if cron is not None:
        return check_cron(cron, now, config)
    if after is not None:
        if isinstance(after, bool) or not isinstance(after, int | float):
            raise WakeupError(f"after must be a number of seconds, got {after!r}")
        due = now + float(after)
    else:
        assert at is not None
        due = parse_time(at, config.tz)
    if not math.isfinite(due) or due < now + config.min_delay:
        raise WakeupError(
            f"a wake-up must be at least {config.min_delay:g} seconds ahead "
            f"(now is {iso(now)}, asked for {iso(due) if math.isfinite(due) else due})"
        )
    if due - now > config.max_delay:
        raise WakeupError(
            f"a wake-up may be at most {config.max_delay / 86_400:g} days ahead, "
            f"asked for {iso(due)}"
        )
    return due


def check_note(note: str, config: WakeupsConfig) -> str:
    if not isinstance(note, str) or not note.strip():
        raise WakeupError("a wake-up needs a note saying why (what to do when woken)")
    if len(note) > config.max_note_chars:
        raise WakeupError(f"the note is longer than {config.max_note_chars} characters")
    return note.strip()
