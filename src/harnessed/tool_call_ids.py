"""Tool-call ids: well formed and used once in a session's working history, whatever the
model sent.

A call's id is what pairs it with its result. Providers reject a request whose call ids repeat
(in one message or across the conversation), are empty, are longer than 40 characters
(OpenAI) or hold characters other than ``A-Z a-z 0-9 _ -`` (Anthropic); harnessed itself finds
a result's approval, pruned or offloaded original and trace by its call's id. Self-hosted
servers do send repeated ids (two calls of one response with the same id, a counter that
starts again with each response) and empty ones.

So the ids of a response are checked where every model response passes, the loop's model
step, before a call is shown, logged or run (:class:`ResponseIds`): an id that is well formed
and not used yet in the working history is kept; any other one gets a fresh id (``call_`` and
32 random hex digits), and the message notes the renaming in its metadata
(``renamed_tool_call_ids``: new id → the id the model sent, clipped to 200 characters). The
model never needs its own id back: a request only has to pair each call with its result.

A history that already holds such ids (written before this check existed) is repaired as it
is loaded (:func:`repair_call_ids`, used by the conversation store, which records the repair
in the log as a checkpoint).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container, Mapping, Sequence
from typing import Any

from harnessed.messages import (
    ContentBlock,
    Msg,
    ToolResultBlock,
    ToolUseBlock,
    new_id,
    shared_prefix,
)

__all__ = [
    "MAX_CALL_ID_CHARS",
    "RENAMED_KEY",
    "CallIdIndex",
    "ResponseIds",
    "repair_call_ids",
    "well_formed",
]

MAX_CALL_ID_CHARS = 40
"""The longest call id kept as the model sent it (OpenAI's limit, the tightest one)."""

RENAMED_KEY = "renamed_tool_call_ids"
"""Message metadata: ``{new id: id the model sent}`` for the calls that were given a new id."""

_WELL_FORMED = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_CALL_ID_CHARS}}}")
_SHOWN_CHARS = 200
_NONE: tuple[str, ...] = ()


def well_formed(call_id: object) -> bool:
    """Whether ``call_id`` is an id every provider accepts (1-40 of ``A-Z a-z 0-9 _ -``)."""
    return isinstance(call_id, str) and _WELL_FORMED.fullmatch(call_id) is not None


def _call_ids(message: Msg) -> tuple[str, ...]:
    if message.role != "assistant":
        return _NONE
    return tuple(b.id for b in message.content if type(b) is ToolUseBlock) or _NONE


class CallIdIndex:
    """The tool-call ids of the last history seen, kept up to date as it changes.

    :meth:`sync` reads only the messages after the prefix ``history`` shares with the history
    it saw last (messages are immutable: an unchanged message is the same object). The list
    of a working history is only ever appended to or replaced by another list, so when it is
    the very list seen last, longer and with the same last message, only its new end is read:
    keeping the index of a growing history costs what was added. ``sound`` says whether every
    id is well formed and used once.
    """

    __slots__ = ("_bad", "_counts", "_ids", "_messages", "_source")

    def __init__(self) -> None:
        self._messages: list[Msg] = []
        self._ids: list[tuple[str, ...]] = []
        self._counts: dict[str, int] = {}
        self._bad = 0
        """Malformed ids plus repeated uses of an id, over the indexed history."""
        self._source: Sequence[Msg] | None = None
        """The list indexed last."""

    def sync(self, history: Sequence[Msg]) -> CallIdIndex:
        """Index ``history`` (re-reading only what changed since the last call)."""
        known = len(self._messages)
        if (
            history is self._source
            and len(history) >= known
            and (not known or history[known - 1] is self._messages[-1])
        ):
            shared = known  # the same list, grown
        else:
            shared = shared_prefix(self._messages, history)
            self._source = history
        if shared == known == len(history):
            return self
        for ids in self._ids[shared:]:
            for call_id in ids:
                self._remove(call_id)
        del self._messages[shared:]
        del self._ids[shared:]
        added = history[shared:]
        found = [_call_ids(m) if m.role == "assistant" else _NONE for m in added]
        self._messages.extend(added)
        self._ids.extend(found)
        for ids in found:
            for call_id in ids:
                self._add(call_id)
        return self

    @property
    def sound(self) -> bool:
        """No call id of the indexed history is malformed or used twice."""
        return self._bad == 0

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._counts

    def __len__(self) -> int:
        return len(self._counts)

    def _add(self, call_id: str) -> None:
        count = self._counts.get(call_id, 0)
        self._bad += (count > 0) + (not well_formed(call_id))
        self._counts[call_id] = count + 1

    def _remove(self, call_id: str) -> None:
        count = self._counts[call_id] - 1
        self._bad -= (count > 0) + (not well_formed(call_id))
        if count:
            self._counts[call_id] = count
        else:
            del self._counts[call_id]


class ResponseIds:
    """Gives the calls of one model response ids that are well formed and new to the session.

    ``taken`` (one or more containers) holds the ids the working history uses already.
    :meth:`call` takes each call as the model streams it; :meth:`message` takes the final
    message and gives its calls the ids their streamed copies got (the n-th call sent with an
    id is the n-th call of the message with that id), so the events, the log and the tools
    all see the same ids.
    """

    __slots__ = ("_assigned", "_renamed", "_seen", "_taken", "_used")

    def __init__(self, *taken: Container[str]) -> None:
        self._taken = taken
        self._used: set[str] = set()
        self._seen: dict[str, int] = {}
        self._assigned: dict[tuple[str, int], str] = {}
        self._renamed: dict[str, str] = {}

    def call(self, call: ToolUseBlock) -> ToolUseBlock:
        """``call`` with the id it keeps or is given (the same block when it keeps its own)."""
        occurrence = self._seen.get(call.id, 0)
        self._seen[call.id] = occurrence + 1
        return self._with_id(call, occurrence)

    def message(self, message: Msg) -> Msg:
        """``message`` with its calls' ids settled (the same object when none changes)."""
        if not message.tool_uses:
            return message
        seen: dict[str, int] = {}
        blocks: list[ContentBlock] = []
        changed = False
        for block in message.content:
            if type(block) is ToolUseBlock:
                occurrence = seen.get(block.id, 0)
                seen[block.id] = occurrence + 1
                fixed = self._with_id(block, occurrence)
                changed = changed or fixed is not block
                blocks.append(fixed)
            else:
                blocks.append(block)
        if not changed:
            return message
        now = {b.id for b in blocks if type(b) is ToolUseBlock}
        renamed = {new: old for new, old in self._renamed.items() if new in now}
        metadata = {**message.metadata, RENAMED_KEY: {**_old_renames(message), **renamed}}
        return message.replace(content=blocks, metadata=metadata)

    def _is_taken(self, call_id: str) -> bool:
        return call_id in self._used or any(call_id in ids for ids in self._taken)

    def _with_id(self, call: ToolUseBlock, occurrence: int) -> ToolUseBlock:
        key = (call.id, occurrence)
        given = self._assigned.get(key)
        if given is None:
            given = call.id
            if not well_formed(given) or self._is_taken(given):
                given = new_id("call_")
                while self._is_taken(given):  # pragma: no cover - a 128-bit collision
                    given = new_id("call_")
                self._renamed[given] = call.id[:_SHOWN_CHARS]
            self._used.add(given)
            self._assigned[key] = given
        if given == call.id:
            return call
        return ToolUseBlock(given, call.name, call.input)


def repair_call_ids(
    history: Sequence[Msg], *, skip: str | None = None, taken: Container[str] = ()
) -> tuple[list[Msg], list[list[str]]] | None:
    """``history`` with every malformed or reused call id renamed, and what was renamed as
    ``[message id, old id, new id]`` rows; ``None`` when nothing needs renaming.

    The first well-formed use of an id keeps it; a later one (in the same message or a later
    one) and every malformed id get ``call_`` and 32 hex digits derived from the message id
    and the call's position, so the same history is always repaired the same way. A call's
    results are renamed with it: the n-th result with an id, in the tool messages right after
    the call's message, answers the n-th call of that message with that id (results are
    written in call order). ``skip`` names a message left as it is (a step parked for
    approval keeps its own copy of its calls); ``taken`` holds ids used before ``history``
    (messages given as a call's input are checked against the session's).
    """
    every = {call_id for message in history for call_id in _call_ids(message)}
    used: set[str] = set()
    out: list[Msg] = []
    rows: list[list[str]] = []
    pending: dict[str, list[str]] = {}  # old id -> new ids of the open message's calls, in order
    for message in history:
        if message.role == "tool":
            if pending:
                message = _rename_results(message, pending)
            out.append(message)
            continue
        pending = {}
        ids = _call_ids(message)
        if not ids or message.id == skip:
            used.update(ids)
            out.append(message)
            continue
        blocks: list[ContentBlock] = []
        renamed: dict[str, str] = {}
        for position, block in enumerate(message.content):
            if type(block) is ToolUseBlock:
                original = given = block.id
                if not well_formed(given) or given in used or given in taken:
                    given = _derived(message.id, position, every, used, taken)
                    renamed[given] = original[:_SHOWN_CHARS]
                    rows.append([message.id, original[:_SHOWN_CHARS], given])
                    block = ToolUseBlock(given, block.name, block.input)
                used.add(given)
                pending.setdefault(original, []).append(given)
            blocks.append(block)
        if renamed:
            kept = {b.id for b in blocks if type(b) is ToolUseBlock}
            metadata = _rekeyed(message.metadata, renamed, kept=kept)
            metadata[RENAMED_KEY] = {**_old_renames(message), **renamed}
            message = message.replace(content=blocks, metadata=metadata)
        else:
            pending = {}  # no result to rename
        out.append(message)
    return (out, rows) if rows else None


def _old_renames(message: Msg) -> dict[str, str]:
    value = message.metadata.get(RENAMED_KEY)
    return dict(value) if isinstance(value, dict) else {}


def _rename_results(message: Msg, pending: dict[str, list[str]]) -> Msg:
    blocks: list[ContentBlock] = []
    renamed: dict[str, str] = {}
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            queue = pending.get(block.tool_use_id)
            if queue:
                given = queue.pop(0)
                if given != block.tool_use_id:
                    renamed[given] = block.tool_use_id
                    block = ToolResultBlock(
                        given, block.content, block.is_error, block.name, block.images
                    )
        blocks.append(block)
    if not renamed:
        return message
    kept = {b.tool_use_id for b in blocks if isinstance(b, ToolResultBlock)}
    metadata = _rekeyed(message.metadata, renamed, kept=kept)
    return message.replace(content=blocks, metadata=metadata)


def _rekeyed(
    metadata: Mapping[str, Any], renamed: dict[str, str], kept: set[str]
) -> dict[str, Any]:
    """``metadata`` with the notes kept by call id (compaction's markers: an offloaded
    result's file, a pruned result's length, cut arguments) moved to the new ids. A note of
    an id that a call of the message still has stays where it is."""
    moves = {old: new for new, old in renamed.items() if old not in kept}
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, Mapping) and key != RENAMED_KEY and moves.keys() & value.keys():
            value = {moves.get(k, k): v for k, v in value.items()}
        out[key] = value
    return out


def _derived(
    message_id: str, position: int, every: set[str], used: set[str], taken: Container[str]
) -> str:
    attempt = 0
    while True:
        seed = f"{message_id}\0{position}\0{attempt}".encode("utf-8", "surrogatepass")
        given = "call_" + hashlib.sha256(seed).hexdigest()[:32]
        if given not in every and given not in used and given not in taken:
            return given
        attempt += 1  # pragma: no cover - a 128-bit collision
