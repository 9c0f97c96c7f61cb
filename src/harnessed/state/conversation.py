"""ConversationStore: one session's :class:`AgentState`, its history a view of the session log.

The session log is the one source of truth for the conversation. The working history is the
log replayed (messages appended, ``history/checkpoint`` records applied); the state store keeps
only the small structured parts (the sections, metadata) and the log
position they were saved at, and is written only when one of them changed. A step costs what
changed:

* :meth:`append` writes records as one batch (one write; one fsync when the log store is
  durable) and applies them to the cached view, keeping the caller's message objects (so the
  compiler's token memo recognises them on the next call);
* :meth:`commit` ends a step: if preparation replaced the working history it adds a
  checkpoint that describes the change (its size follows the change, not the history), writes
  the step's records, and saves the structured state only if it differs from what was loaded;
* :meth:`load` brings the cached view up to date by reading only the records appended since it
  was last read (by this process or another one), so a process keeps recently used sessions
  loaded (bounded LRU) and never re-reads a whole log it already knows.

On load under the session lock (``settle=True``) three repairs happen, each recorded in the
log: a state file of the previous format (which held the working history itself) is converted
once into a checkpoint; tool-call ids that repeat or that a provider refuses (logged before
every response's ids were checked, see :mod:`harnessed.tool_call_ids`) are renamed, calls and
results, by a checkpoint that lists each renaming; and a step whose tool calls have no results
is settled: if its process
stopped (no end of its run in the log) each call gets an "interrupted" error result (never a
fabricated success); if its run ended (the step failed or was cancelled, and the loop logged
why) the step is dropped from the history, as a failed step always was.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harnessed._internal.gcpause import gc_paused
from harnessed.log.checkpoint import checkpoint_ops
from harnessed.log.record import NewRecord, RecordType, SessionRecord
from harnessed.log.store import SessionLogStore
from harnessed.log.view import (
    RENAMED_CALL_IDS,
    LogView,
    interrupted_results,
    process_stamp,
    unanswered_step,
)
from harnessed.messages import Msg, ToolUseBlock, shared_prefix
from harnessed.runtime import SessionRef
from harnessed.state.agent_state import AgentState
from harnessed.state.store import AgentStateStore
from harnessed.tool_call_ids import CallIdIndex, repair_call_ids

__all__ = ["ConversationStore"]

_BULK_RECORDS = 2_000
"""A read of at least this many records is applied with the cyclic collector paused."""

_UNSAVED = {"version", "log_seq", "history_revision", "history", "_decoded"}


@dataclass(slots=True)
class _Entry:
    view: LogView = field(default_factory=LogView)
    saved: str | None = None
    """Fingerprint of the structured state as last loaded or saved."""
    runs: list[weakref.ref[AgentState]] = field(default_factory=list)
    """The states of calls working on the session (loaded with ``settle=True``): while one
    is alive the entry is not dropped, so a step's commit never replays the log or saves an
    unchanged state because many other sessions were loaded in between."""
    loading: int = 0
    call_ids: CallIdIndex = field(default_factory=CallIdIndex)
    """The tool-call ids of the view's history: each look reads only what it gained since."""

    def in_use(self) -> bool:
        self.runs = [ref for ref in self.runs if ref() is not None]
        return bool(self.runs or self.loading)


class ConversationStore:
    """Loads sessions' states from a session log and a state store, and commits their steps.

    Args:
        log: The session log store (the truth for the conversation).
        states: Where the structured parts of :class:`AgentState` are kept.
        max_sessions: How many sessions' replayed histories stay loaded (least recently used
            sessions are dropped first and replayed again when needed; sessions a call is
            working on are never dropped, so more may be loaded while many calls run).
    """

    def __init__(
        self, log: SessionLogStore, states: AgentStateStore, *, max_sessions: int = 64
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"ConversationStore max_sessions must be at least 1: {max_sessions}")
        self.log = log
        self.states = states
        self.max_sessions = max_sessions
        self._entries: OrderedDict[SessionRef, _Entry] = OrderedDict()
        self._evict_above = max_sessions

    def __repr__(self) -> str:
        return f"ConversationStore({self.log!r}, {self.states!r})"

    # ------------------------------------------------------------------ views
    def _entry(self, key: SessionRef) -> _Entry:
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
        self._entries.move_to_end(key)
        if len(self._entries) > self._evict_above:
            self._evict(keep=key)
        return entry

    def _evict(self, keep: SessionRef) -> None:
        """Drop least recently used entries beyond the bound, skipping those in use. While
        many are in use the next scan waits until a few more were added (a scan costs the
        number of entries)."""
        excess = len(self._entries) - self.max_sessions
        idle = [k for k, e in self._entries.items() if k != keep and not e.in_use()]
        for key in idle[:excess]:
            del self._entries[key]
        left = len(self._entries)
        self._evict_above = max(self.max_sessions, left + left // 8)

    async def _sync(self, key: SessionRef) -> _Entry:
        """The session's entry, with every record appended since it was last read applied.
        The first read of a session with a long log replays it whole: a bulk load, made
        without the cyclic garbage collector rescanning the heap it is building."""
        entry = self._entry(key)
        records = await self.log.read(key, after_seq=entry.view.through)
        if len(records) < _BULK_RECORDS:
            entry.view.apply(records)
        else:  # a long log replayed: a bulk load (not paused for short ones: a server that
            # loads many small sessions at once would keep the collector off for long)
            with gc_paused():
                entry.view.apply(records)
        return entry

    def call_ids(self, key: SessionRef) -> CallIdIndex:
        """The tool-call ids of the session's history as this store has written and read it
        (a model response's calls get ids that are not among them). Kept up to date as the
        history grows: a look costs the messages added since the last one."""
        entry = self._entries.get(key) or self._entry(key)
        return entry.call_ids.sync(entry.view.messages)

    async def history(self, key: SessionRef) -> list[Msg]:
        """The working history of a session as its log says now."""
        return list((await self._sync(key)).view.messages)

    # ------------------------------------------------------------------ load
    async def load(self, key: SessionRef, *, settle: bool = False) -> AgentState:
        """The session's state with its working history (a fresh state for a new session).

        ``settle=True`` (only under the session lock, before a call continues the session)
        converts a state of the previous format and answers tool calls left unanswered.
        """
        skey = SessionRef(key.agent_id, key.user_id, key.session_id)
        if not settle:
            return await self._load(key, skey, settle=False)
        entry = self._entry(skey)
        entry.loading += 1  # kept while other sessions load meanwhile
        try:
            state = await self._load(key, skey, settle=True)
        finally:
            entry.loading -= 1
        entry.runs.append(weakref.ref(state))
        return state

    async def _load(self, key: SessionRef, skey: SessionRef, *, settle: bool) -> AgentState:
        # one after the other: for a warm session both are answered without a worker hand-off
        # (a stat of the log, a small or missing state file), where tasks would cost more
        entry = await self._sync(skey)
        stored = await self.states.load(key)
        state = stored or AgentState.new(key)
        if state.history:
            if not settle:
                return state  # a previous-format state: its history is the working one
            await self._convert(skey, entry, state)
        parked = _parked_message_id(state)
        view = entry.view
        history = view.messages
        if not entry.call_ids.sync(history).sound:
            repaired = repair_call_ids(history, skip=parked)
            if repaired is not None and settle:
                await self._rename_call_ids(skey, entry, *repaired)
                history = view.messages
            elif repaired is not None:  # read only: the same repair, not written
                history = repaired[0]
        start, missing = unanswered_step(history, skip=parked)
        repair = bool(missing) and view.tail_logged and not view.run_alive(view.last_message_run)
        abandoned = repair and view.run_ended(view.last_message_run)
        if repair and settle:
            await self._settle(skey, entry, start, missing, abandoned=abandoned)
            abandoned = False
            history = view.messages
        if abandoned:
            history = history[:start]  # what settling will drop (see _settle)
        elif parked is not None and history and history[-1].id == parked:
            history = history[:-1]  # the parked step rejoins the history when it is settled
        state.history = list(history)
        state.log_seq = view.through
        entry.saved = _fingerprint(state)
        return state

    async def _settle(
        self,
        key: SessionRef,
        entry: _Entry,
        start: int,
        missing: list[ToolUseBlock],
        *,
        abandoned: bool,
    ) -> None:
        """A step whose tool calls have no results. If its run logged an end (the step failed
        or was cancelled; the loop has recorded why) the step is dropped from the history, as
        if it had never been taken. Otherwise the process stopped while its tools ran: each
        call gets an "interrupted" error result."""
        view = entry.view
        if abandoned:
            payload = {
                "after": view.checkpoint,
                "base_len": len(view.messages),
                "ops": [[0, start]] if start else [],
                "messages": start,
                "reason": "unfinished step dropped",
            }
            await self._write(key, entry, [NewRecord(RecordType.CHECKPOINT, payload)])
            return
        note = {
            "error_type": "ProcessInterrupted",
            "message": "the process stopped before these tool calls finished",
            "call_ids": [c.id for c in missing],
        }
        records = [NewRecord(RecordType.ERROR, note)]
        for message in interrupted_results(missing):
            records.append(NewRecord.message(message, run_id=None, turn_id=None))
        await self._write(key, entry, records)

    async def _rename_call_ids(
        self, key: SessionRef, entry: _Entry, repaired: list[Msg], renamed: list[list[str]]
    ) -> None:
        """The history holds tool-call ids that repeat or that a provider refuses (logged
        before every response's ids were checked): the log takes the history with those calls
        and their results renamed as a checkpoint, which lists each renaming. The original
        messages stay in the log as they were."""
        view = entry.view
        payload = {
            "after": view.checkpoint,
            "base_len": len(view.messages),
            "ops": checkpoint_ops(view.messages, repaired) or [],
            "messages": len(repaired),
            "reason": "tool call ids repaired",
            RENAMED_CALL_IDS: renamed,
        }
        tail_logged = view.tail_logged
        await self._write(key, entry, [NewRecord(RecordType.CHECKPOINT, payload)], adopt=repaired)
        view.tail_logged = tail_logged  # a renamed step left unanswered is still settled
        entry.call_ids.sync(view.messages)

    async def _convert(self, key: SessionRef, entry: _Entry, state: AgentState) -> None:
        """A state saved with its history (the previous format, or an application that set
        the history through the state store): the log takes the history as a checkpoint."""
        view = entry.view
        ops = [{"message": m.to_dict()} for m in state.history]
        payload = {
            "after": view.checkpoint,
            "base_len": len(view.messages),
            "ops": ops,
            "messages": len(ops),
            "reason": "converted",
        }
        await self._write(key, entry, [NewRecord(RecordType.CHECKPOINT, payload)])
        state.history = []
        await self._save(state, entry, force=True)

    # ---------------------------------------------------------------- writes
    async def append(self, key: SessionRef, records: Sequence[NewRecord]) -> list[SessionRecord]:
        """Write ``records`` to the session log as one batch and apply them to the view."""
        return await self._write(key, self._entry(key), records)

    async def commit(self, state: AgentState, records: Sequence[NewRecord]) -> None:
        """End a step: write its records (with a checkpoint if the working history was
        replaced) as one batch, then save the structured state if it changed."""
        key = SessionRef(state.agent_id, state.user_id, state.session_id)
        entry = self._entries.get(key) or await self._sync(key)
        view = entry.view
        batch = list(records)
        pending = [r.msg for r in batch if r.msg is not None and r.type == RecordType.MESSAGE]
        history = state.history
        k = len(pending)
        if not (k and len(history) >= k and all(map(operator.is_, history[-k:], pending))):
            k = 0
        settled_len = len(history) - k  # the history without this batch's messages
        ops = None
        if not _starts_with(view.messages, history, settled_len):
            settled = history[:settled_len]
            ops = checkpoint_ops(view.messages, settled)
        if ops is not None:
            first = batch[0] if batch else None
            payload = {
                "after": view.checkpoint,
                "base_len": len(view.messages),
                "ops": ops,
                "messages": settled_len,
            }
            checkpoint = NewRecord(
                RecordType.CHECKPOINT,
                payload,
                first.run_id if first else None,
                first.turn_id if first else None,
            )
            batch.insert(0, checkpoint)
        if batch:
            await self._write(key, entry, batch, adopt=settled if ops is not None else None)
        await self._save(state, entry)

    async def _write(
        self,
        key: SessionRef,
        entry: _Entry,
        records: Sequence[NewRecord],
        *,
        adopt: list[Msg] | None = None,
    ) -> list[SessionRecord]:
        """Append, then apply to the view. ``adopt``: the history a leading checkpoint of
        ``records`` produces, as the caller's objects."""
        records = [_stamped(r) for r in records]
        view = entry.view
        through = view.through
        stored = await self.log.append(key, records)
        if not stored:
            return stored
        if stored[0].seq != through + 1 or view.through != through:
            # another writer appended in between: read what we missed, in log order
            view.apply(await self.log.read(key, after_seq=view.through))
            return stored
        for new, record in zip(records, stored, strict=True):
            if adopt is not None and record.type == RecordType.CHECKPOINT:
                tail = view.messages[-1] if view.messages else None
                view.messages, view.checkpoint, view.through = adopt, record.seq, record.seq
                view.tail_logged = view.tail_logged and bool(adopt) and adopt[-1] is tail
                adopt = None
            else:
                view.apply_own(new, record)
        return stored

    async def _save(self, state: AgentState, entry: _Entry, *, force: bool = False) -> None:
        fingerprint = _fingerprint(state)
        if not force and fingerprint == entry.saved:
            return
        structured = dataclasses.replace(state, history=[], log_seq=entry.view.through)
        await self.states.save(structured)
        state.version = structured.version
        state.log_seq = structured.log_seq
        entry.saved = fingerprint


_FINGERPRINTED = tuple(f.name for f in dataclasses.fields(AgentState) if f.name not in _UNSAVED)


def _fingerprint(state: AgentState) -> str:
    """The structured parts of ``state`` as compared between load and commit (every field but
    the history and the storage counters; read in place, nothing copied)."""
    data = {name: getattr(state, name) for name in _FINGERPRINTED}
    return json.dumps(data, sort_keys=True, default=_plain)


def _plain(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else str(value)


def _starts_with(logged: Sequence[Msg], history: Sequence[Msg], length: int) -> bool:
    """Whether ``history[:length]`` is the start of ``logged`` (same or equal messages): what
    the log holds beyond it was written ahead of the state (a step's message before its
    results). Compares in place, without copying the history."""
    if length > len(logged):
        return False
    start = shared_prefix(logged, history)
    return start >= length or all(logged[i] == history[i] for i in range(start, length))


def _stamped(record: NewRecord) -> NewRecord:
    if record.type == RecordType.RUN_START and "pid" not in record.payload:
        return dataclasses.replace(record, payload={**record.payload, **process_stamp()})
    return record


def _parked_message_id(state: AgentState) -> str | None:
    """The id of the assistant message of a step waiting for approval, if any."""
    from harnessed.state.parked import ParkedStep

    try:
        parked = ParkedStep.of(state)
    except ValueError:
        return None
    return parked.message.id if parked is not None else None
