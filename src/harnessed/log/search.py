"""Searching session logs: the ``SearchIndex`` protocol, its hits, and the matching rules.

Every backend follows the same rules so they are interchangeable. Text is split into words
(runs of letters and digits; case and accents are ignored) and a query matches a message as
a ``phrase`` (the words in this order, next to each other — the default), when it has ``all``
of the words, or ``any`` of them. Results come newest first (``order="recent"``, what an agent
usually wants and cheap to answer) or best first (``order="relevance"``). Only ``message``
records are searched; a message's text is its text blocks, its tool results and its tool calls
(name and arguments), never its thinking.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol, TypeAlias, get_args, runtime_checkable

from harnessed.log.record import RecordType, SessionRecord
from harnessed.log.store import SessionLogStore
from harnessed.messages import Msg, clean_text
from harnessed.runtime import SessionRef

__all__ = [
    "BlockingSearchIndex",
    "GroupedSearchIndex",
    "MatchMode",
    "SearchHit",
    "SearchIndex",
    "SearchOrder",
    "check_search_args",
    "fold",
    "indexable",
    "message_text",
    "query_words",
    "snippet",
    "timestamp_micros",
    "words",
]

MatchMode: TypeAlias = Literal["phrase", "all", "any"]
SearchOrder: TypeAlias = Literal["recent", "relevance"]

_MATCH_MODES: tuple[str, ...] = get_args(MatchMode)
_ORDERS: tuple[str, ...] = get_args(SearchOrder)
_WORD = re.compile(r"[^\W_]+")
MAX_RESULTS_LIMIT = 200


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One message that matched a search."""

    session_id: str
    seq: int
    """The record's sequence number in its session log."""
    role: str
    text: str
    """The message's full searchable text, as it was logged (never a compacted form)."""
    timestamp: str
    name: str | None = None
    """The tool name of a tool message."""

    def snippet(self, query: str, width: int = 300) -> str:
        """About ``width`` characters of the text around the first matched word."""
        return snippet(self.text, query, width)


@runtime_checkable
class GroupedSearchIndex(Protocol):
    """A search index that can take several sessions of one user in one write (concurrent
    appends of a user are indexed as one group)."""

    async def add_many(
        self, agent_id: str, user_id: str, batches: Sequence[tuple[str, Sequence[SessionRecord]]]
    ) -> list[int]:
        """Like ``add`` for each ``(session_id, records)``; returns each session's indexed
        seq."""
        ...


@runtime_checkable
class BlockingSearchIndex(Protocol):
    """A search index whose grouped write can also be called blocking, from any thread: an
    :class:`~harnessed.log.IndexedSessionLogStore` over a
    :class:`~harnessed.log.store.BatchAppendStore` then indexes each batch in the worker
    thread that wrote it to the log (one hand-off per batch for both)."""

    def add_many_blocking(
        self, agent_id: str, user_id: str, batches: Sequence[tuple[str, Sequence[SessionRecord]]]
    ) -> list[int]:
        """:meth:`GroupedSearchIndex.add_many`, blocking (records of a session in order)."""
        ...


class SearchIndex(Protocol):
    """A full-text index of session messages, separated by agent and user.

    ``add`` is idempotent and ordered: it indexes the records that continue a session's
    indexed prefix and returns the sequence number the session is now indexed through. When it
    returns less than the last record's ``seq`` the caller is missing records (a failed or
    concurrent append) and should pass the records after the returned number.
    """

    async def add(self, key: SessionRef, records: Sequence[SessionRecord]) -> int:
        """Index ``records`` (any types; only messages are searchable)."""
        ...

    async def indexed_through(self, key: SessionRef) -> int:
        """The highest ``seq`` of the session whose prefix is fully indexed (0 = nothing)."""
        ...

    async def is_built(self, agent_id: str, user_id: str) -> bool:
        """Whether the user's sessions were ever indexed (else :meth:`rebuild` first)."""
        ...

    async def search(
        self,
        agent_id: str,
        user_id: str,
        query: str,
        *,
        max_results: int = 10,
        match: MatchMode = "phrase",
        order: SearchOrder = "recent",
        session_id: str | None = None,
    ) -> list[SearchHit]:
        """Messages of one user's sessions (or one session) that match ``query``."""
        ...

    async def rebuild(self, store: SessionLogStore, agent_id: str, user_id: str) -> int:
        """Drop the user's index and index every session of ``store`` again; returns the
        number of messages indexed."""
        ...

    async def close(self) -> None:
        """Release files and connections."""
        ...


# ------------------------------------------------------------------ shared rules
def fold(text: str) -> str:
    """Lower-case ``text`` and strip accents (``É`` → ``e``), as the indexes do."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    """The folded words of ``text``: runs of letters and digits."""
    return _WORD.findall(fold(text))


def query_words(query: str, *, folded: bool = True) -> list[str]:
    """The words of a query; raises ``ValueError`` when it has none.

    ``folded=False`` keeps each word as typed, for an index whose own tokenizer folds the
    query exactly as it folded the text (SQLite FTS5).
    """
    if not isinstance(query, str):
        raise TypeError(f"a search query must be a string, got {type(query).__name__}")
    found = words(query) if folded else _WORD.findall(query)
    if not found:
        raise ValueError(f"the search query {query!r} has no words to look for (letters or digits)")
    return found


def check_search_args(max_results: int, match: str, order: str) -> None:
    """Validate the common search arguments with messages that name the bad value."""
    if not isinstance(max_results, int) or not 1 <= max_results <= MAX_RESULTS_LIMIT:
        raise ValueError(
            f"max_results must be between 1 and {MAX_RESULTS_LIMIT}, got {max_results!r}"
        )
    if match not in _MATCH_MODES:
        raise ValueError(f"match must be one of {', '.join(_MATCH_MODES)}; got {match!r}")
    if order not in _ORDERS:
        raise ValueError(f"order must be one of {', '.join(_ORDERS)}; got {order!r}")


def matches(text_words: Sequence[str], wanted: Sequence[str], match: MatchMode) -> bool:
    """Whether a message with ``text_words`` matches the query words ``wanted``."""
    if match == "any":
        present = set(text_words)
        return any(w in present for w in wanted)
    if match == "all":
        present = set(text_words)
        return all(w in present for w in wanted)
    n = len(wanted)
    first = wanted[0]
    return any(
        text_words[i] == first and list(text_words[i : i + n]) == list(wanted)
        for i in range(len(text_words) - n + 1)
    )


def message_text(message: Msg) -> str:
    """The searchable text of a message: text, tool results and tool calls (no thinking)."""
    return _dict_text(message.to_dict().get("content") or ())


_SEARCH_TOOLS = frozenset({"session_search", "memory_search"})
"""Searches and their answers are not indexed: a later search would find its own echoes."""


def _dict_text(blocks: Any) -> str:
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, Mapping) or block.get("name") in _SEARCH_TOOLS:
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text") or ""))
        elif kind == "tool_result":
            parts.append(str(block.get("content") or ""))
        elif kind == "tool_use":
            arguments = json.dumps(dict(block.get("input") or {}), ensure_ascii=False)
            parts.append(f"{block.get('name')} {arguments}")
    return "\n".join(p for p in parts if p)


def indexable(record: SessionRecord) -> tuple[str, str, str | None] | None:
    """``(role, text, tool name)`` of a searchable record, ``None`` for anything else.

    Reads the logged message data directly (no :class:`Msg` is built: indexing and scanning
    call this for every record).
    """
    if record.type != RecordType.MESSAGE:
        return None
    data = record.payload.get("message")
    if not isinstance(data, Mapping):
        return None
    content = data.get("content")
    if not isinstance(content, list | tuple):
        return None
    # a lone UTF-16 surrogate (logged as it came) is repaired here, once for every backend:
    # SQLite, tantivy and PostgreSQL cannot store it, and a hit's text is always valid UTF-8
    text = clean_text(_dict_text(content))
    if not text.strip():
        return None
    name = data.get("name")
    return str(data.get("role")), text, clean_text(name) if isinstance(name, str) else None


def timestamp_micros(timestamp: str) -> int:
    """Microseconds since the epoch of an ISO timestamp (0 when it cannot be read)."""
    try:
        moment = datetime.fromisoformat(timestamp)
    except (TypeError, ValueError):
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def snippet(text: str, query: str, width: int = 300) -> str:
    """A window of about ``width`` characters around the first word of ``query`` in ``text``.

    Ellipses mark cut ends; newlines become spaces so one hit is one line.
    """
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    wanted = set(words(query))
    start = 0
    for found in _WORD.finditer(flat):
        if fold(found.group()) in wanted:
            start = found.start()
            break
    left = max(0, min(start - width // 3, len(flat) - width))
    piece = flat[left : left + width]
    return ("…" if left > 0 else "") + piece + ("…" if left + width < len(flat) else "")
