"""LogView: the working history of one session, replayed from its log.

Records are applied in ``seq`` order: a message record appends its message, a checkpoint
record rewrites the history (see :mod:`harnessed.log.checkpoint`). The view also follows
which runs are open (started, not ended) and by which process, so recovery can tell a tool
call a dead process left unanswered from one a live process is still running.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harnessed.log.checkpoint import CheckpointError, apply_checkpoint
from harnessed.log.record import NewRecord, RecordType, SessionRecord
from harnessed.messages import Msg, ToolResultBlock, ToolUseBlock

__all__ = [
    "INTERRUPTED_TEXT",
    "RENAMED_CALL_IDS",
    "LogView",
    "interrupted_results",
    "process_stamp",
    "unanswered_step",
]

logger = logging.getLogger(__name__)

INTERRUPTED_TEXT = (
    "interrupted: the process stopped before this tool finished. It may have done part of "
    "its work; check its effects before running it again."
)
_HOST = socket.gethostname()

RENAMED_CALL_IDS = "renamed_call_ids"
"""Checkpoint payload key of a checkpoint that only renames tool-call ids: rows of
``[message id, old id, new id]`` (see :mod:`harnessed.tool_call_ids`)."""


def process_stamp() -> dict[str, Any]:
    """Who is writing: recorded in ``run/start`` so a reader can tell whether the run lives."""
    return {"pid": os.getpid(), "host": _HOST}


@dataclass(slots=True)
class LogView:
    """What one session's log says the working history is, up to record ``through``."""

    messages: list[Msg] = field(default_factory=list)
    through: int = 0
    """The last record ``seq`` applied."""
    checkpoint: int = 0
    """The ``seq`` of the last checkpoint applied (0: none)."""
    open_runs: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    """``run/start`` payloads of runs without a ``run/end`` yet, by run id."""
    last_message_run: str | None = None
    """The run that logged the last message."""
    tail_logged: bool = False
    """The last message is a logged message record (not a view a checkpoint wrote)."""

    def apply(self, records: Iterable[SessionRecord]) -> None:
        for record in records:
            if record.seq <= self.through:
                continue
            self.through = record.seq
            kind = record.type
            if kind == RecordType.MESSAGE:
                message = record.message
                if message is not None:
                    self.messages.append(message)
                    self.last_message_run, self.tail_logged = record.run_id, True
            elif kind == RecordType.CHECKPOINT:
                self._checkpoint(record.seq, record.payload)
            elif kind == RecordType.RUN_START and record.run_id:
                self.open_runs[record.run_id] = record.payload
            elif kind == RecordType.RUN_END and record.run_id:
                self.open_runs.pop(record.run_id, None)

    def apply_own(self, new: NewRecord, stored: SessionRecord) -> None:
        """Apply a record this process wrote, keeping the caller's message object."""
        if new.msg is not None and stored.type == RecordType.MESSAGE:
            if stored.seq > self.through:
                self.through = stored.seq
                self.messages.append(new.msg)
                self.last_message_run, self.tail_logged = stored.run_id, True
        else:
            self.apply([stored])

    def _checkpoint(self, seq: int, payload: Mapping[str, Any]) -> None:
        after = payload.get("after", 0)
        if after != self.checkpoint:
            logger.warning(
                "checkpoint %d was made after checkpoint %s but the history reflects %d "
                "(two writers rewrote it at once); keeping the logged messages",
                seq,
                after,
                self.checkpoint,
            )
            return
        tail = self.messages[-1] if self.messages else None
        try:
            self.messages = apply_checkpoint(self.messages, payload)
        except (CheckpointError, ValueError, KeyError, TypeError) as exc:
            logger.warning("skipping unreadable checkpoint %d: %s", seq, exc)
            return
        self.checkpoint = seq
        renaming = bool(payload.get(RENAMED_CALL_IDS))  # the same messages, other call ids
        if not renaming and (not self.messages or self.messages[-1] is not tail):
            self.tail_logged = False

    def run_ended(self, run_id: str | None) -> bool:
        """Whether ``run_id`` logged its end (it failed or stopped, rather than the process)."""
        return run_id is not None and run_id not in self.open_runs

    def run_alive(self, run_id: str | None) -> bool:
        """Whether ``run_id`` is open and its process (on this host) still runs."""
        if run_id is None:
            return False
        start = self.open_runs.get(run_id)
        if start is None:
            return False
        pid, host = start.get("pid"), start.get("host")
        if host != _HOST or not isinstance(pid, int) or pid == os.getpid():
            return False  # another host cannot be checked; our own process holds the lock
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def unanswered_step(
    history: list[Msg], *, skip: str | None = None
) -> tuple[int, list[ToolUseBlock]]:
    """Where the last step of ``history`` starts and its tool calls that have no result.

    Only the last assistant message can be unanswered (a step logs its message, then its
    results); ``skip`` names a message that legitimately waits (a step parked for approval).
    ``(len(history), [])`` when every call has its result.
    """
    answered: set[str] = set()
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == "tool":
            answered.update(r.tool_use_id for r in message.tool_results)
            continue
        if message.role != "assistant" or not message.tool_uses or message.id == skip:
            break
        missing = [c for c in message.tool_uses if c.id not in answered]
        if missing:
            return index, missing
        break
    return len(history), []


def interrupted_results(calls: list[ToolUseBlock]) -> list[Msg]:
    """The error results that answer ``calls`` a stopped process left without one."""
    return [
        Msg(
            "tool",
            (ToolResultBlock(call.id, INTERRUPTED_TEXT, is_error=True, name=call.name),),
            name=call.name,
            metadata={"harness": "interrupted"},
        )
        for call in calls
    ]
