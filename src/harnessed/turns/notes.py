"""Notes to a session's running turn, wherever it runs: steering and interrupts across processes.

A turn runs in the process holding its session's lease (see :mod:`harnessed.turns.gate`).
A request to steer or interrupt it may reach another process (another server behind a load
balancer, or a CLI beside a server). That process leaves a *note* at the gate, addressed to
the lease holder; the holder collects its notes while the turn runs (every
:data:`NOTE_POLL_SECONDS`) and applies them to the turn as if they had been given locally.

Notes are an optional part of a gate (:class:`TurnNotes`); a :class:`TurnGate` without them
still works, and steering then reaches only turns of the same process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from harnessed.turns.gate import TurnLease

if TYPE_CHECKING:
    from harnessed.messages import Msg
    from harnessed.turns.control import TurnControl

__all__ = [
    "Delivery",
    "MAX_NOTE_BYTES",
    "NOTE_POLL_SECONDS",
    "Note",
    "TurnNotes",
    "apply_notes",
    "encode_note",
    "late_steering",
    "listen_for_notes",
    "notes_of",
]

logger = logging.getLogger(__name__)

Note: TypeAlias = dict[str, Any]
"""A note: a small JSON object, ``{"kind": "steer", "text": ..., "id": ...}`` or
``{"kind": "interrupt", "reason": ...}``."""

NOTE_POLL_SECONDS = 0.25
"""How often the holder of a turn collects its notes (a gate may set ``notes_poll_interval``)."""

MAX_NOTE_BYTES = 2 << 20  # room for a 100,000-character message of escaped characters
"""The largest note a gate accepts (as JSON)."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """Where :meth:`AgentSession.send_steer` / ``send_interrupt`` delivered."""

    turn_id: str | None
    """The turn steered or interrupted when it runs in this process (``None`` when it runs
    in another: its id is not known here)."""
    message_id: str | None
    """The steering message's id (the same in the turn's history wherever it runs)."""
    elsewhere: bool
    """Sent as a note to the process running the turn (it applies it within
    :data:`NOTE_POLL_SECONDS`), not applied here."""


@runtime_checkable
class TurnNotes(Protocol):
    """A turn gate that carries notes to the holder of a session's lease.

    A note is addressed to the holder that holds the session's live lease when it is posted,
    and only that holder collects it: a note never reaches a later turn of another holder.
    """

    async def holder(self, session: str) -> TurnLease | None:
        """The session's live (unexpired) lease, or ``None`` when no turn holds it."""
        ...

    async def post(self, session: str, note: Note) -> TurnLease | None:
        """Leave ``note`` for the live holder of ``session``; returns its lease, or ``None``
        (and posts nothing) when no live lease exists. Checking the lease and posting happen
        at once: a holder that collects after releasing its lease sees every note posted."""
        ...

    async def collect(self, lease: TurnLease) -> list[Note]:
        """Take (and remove) the notes addressed to ``lease``'s holder, oldest first; notes
        left for holders whose lease is gone are dropped once ``STALE_NOTE_SECONDS`` old (younger
        ones wait for their holder's last collect). Cheap when there are none."""
        ...


def notes_of(gate: object) -> TurnNotes | None:
    """``gate`` as :class:`TurnNotes` when it carries notes."""
    return gate if isinstance(gate, TurnNotes) else None


def encode_note(note: Note) -> str:
    """A note as one line of JSON; raises ``ValueError`` for anything else."""
    if not isinstance(note, dict) or not isinstance(note.get("kind"), str):
        raise ValueError(f"a turn note must be a dict with a 'kind' string, got {note!r}")
    try:
        text = json.dumps(note, separators=(",", ":"), ensure_ascii=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"a turn note must be JSON: {exc}") from None
    if len(text) > MAX_NOTE_BYTES:
        raise ValueError(f"a turn note is {len(text)} bytes, more than {MAX_NOTE_BYTES}")
    return text


def apply_notes(control: TurnControl, notes: list[Note]) -> None:
    """Apply collected notes to a turn: steering joins its inbox, an interrupt stops it."""
    for note in notes:
        kind = note.get("kind")
        try:
            if kind == "steer":
                control.steer(str(note.get("text", "")), id=_str_or_none(note.get("id")))
            elif kind == "interrupt":
                control.interrupt(str(note.get("reason") or "the user stopped the turn"))
            else:
                logger.warning("ignoring a turn note of unknown kind %r", kind)
        except ValueError:
            logger.warning("ignoring a malformed turn note %r", note, exc_info=True)


def late_steering(notes: list[Note]) -> list[Msg]:
    """The steering messages of notes collected after the turn ended (interrupts are stale
    then and dropped)."""
    from harnessed.turns.control import TurnControl

    inbox = TurnControl()
    apply_notes(inbox, [note for note in notes if note.get("kind") == "steer"])
    return inbox.take_steering()


async def listen_for_notes(
    notes: TurnNotes, lease: TurnLease, control: TurnControl, stop: asyncio.Event
) -> None:
    """Collect the holder's notes and apply them to ``control`` until ``stop`` is set.

    Stopped by the event, never cancelled while collecting: notes taken from the gate are
    always applied (a cancelled collect could remove notes nobody applies)."""
    interval = getattr(notes, "notes_poll_interval", NOTE_POLL_SECONDS)
    if not isinstance(interval, int | float) or not interval > 0:
        interval = NOTE_POLL_SECONDS  # a gate's bad setting must not spin the loop
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)
        if stop.is_set():
            return
        try:
            apply_notes(control, await notes.collect(lease))
        except Exception:
            logger.warning("could not collect the notes of %s", lease.session, exc_info=True)


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
