"""Searching session logs: the ``SearchIndex`` protocol, its hits, and the matching rules.

Every backend follows the same rules so they are interchangeable, and indexes the terms these
rules make (never its own tokenizer's), for the text and the query alike. Text is folded (NFKC,
case and accents ignored: ``x²y`` reads as ``x2y``, ``É`` as ``e``) and split into words (runs
of letters and digits). Chinese, Japanese and Korean have no spaces between words, so a run of
their characters becomes its overlapping pairs of characters plus its last character alone
(``数据库`` → ``数据 据库 库``): a word of two or more characters is the phrase of its pairs, a
single character matches the terms that start with it. A query matches a message as a
``phrase`` (the words in this order, next to each other — the default), when it has ``all``
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
    "Phrase",
    "SearchHit",
    "SearchIndex",
    "SearchOrder",
    "check_search_args",
    "fold",
    "indexable",
    "message_text",
    "matches",
    "query_phrases",
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
_CJK_CLASS = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005\u3007\u3021-\u3029\u3031-\u3035\u3040-\u30ff"
    "\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\U00020000-\U0003134f"
)
_CJK = re.compile(f"[{_CJK_CLASS}]+")
_KANA_MARKS = frozenset("\u3099\u309a")
"""The voicing marks of kana are part of the letter (``ガ`` is not ``カ``), not accents."""


def fold(text: str) -> str:
    """``text`` as every index compares it: NFKC-normalized (``²`` → ``2``, full-width →
    ASCII), case-folded and without accents (``É`` → ``e``)."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    kept = "".join(c for c in decomposed if not unicodedata.combining(c) or c in _KANA_MARKS)
    return unicodedata.normalize("NFC", kept)


_WORD_TERM, _PAIR_TERM, _LAST_TERM = 0, 1, 2


def _terms(folded: str) -> list[tuple[str, int]]:
    """The terms of folded text with their kinds (a word, a CJK pair, a CJK run's last
    character)."""
    out: list[tuple[str, int]] = []
    for run in _WORD.findall(folded):
        if run.isascii() or _CJK.search(run) is None:
            out.append((run, _WORD_TERM))
            continue
        pos = 0
        for found in _CJK.finditer(run):
            if found.start() > pos:
                out.append((run[pos : found.start()], _WORD_TERM))
            piece = found.group()
            out.extend((piece[i : i + 2], _PAIR_TERM) for i in range(len(piece) - 1))
            out.append((piece[-1], _LAST_TERM))
            pos = found.end()
        if pos < len(run):
            out.append((run[pos:], _WORD_TERM))
    return out


def words(text: str) -> list[str]:
    """The terms every index holds for ``text``, in order: its folded words, a CJK run as its
    character pairs and its last character (see the module notes)."""
    folded = fold(text)
    if folded.isascii():
        return _WORD.findall(folded)
    return [term for term, _ in _terms(folded)]


@dataclass(frozen=True, slots=True)
class Phrase:
    """Terms a message must hold next to each other, in this order."""

    terms: tuple[str, ...]
    prefix: bool = False
    """The last term is a single CJK character: it matches any term that starts with it."""

    def found_in(self, text_terms: Sequence[str]) -> bool:
        """Whether ``text_terms`` (from :func:`words`) hold this phrase."""
        terms, n = self.terms, len(self.terms)
        head, last = terms[:-1], terms[-1]
        for i in range(len(text_terms) - n + 1):
            end = text_terms[i + n - 1]
            if (end == last or (self.prefix and end.startswith(last))) and (
                not head or list(text_terms[i : i + n - 1]) == list(head)
            ):
                return True
        return False


def _phrase(folded: str) -> Phrase | None:
    """The phrase a query (or one query word) looks for. The query's end is open: a last
    CJK run of two or more characters needs only its pairs, a last single character is a
    prefix."""
    terms = _terms(folded)
    if not terms:
        return None
    prefix = False
    if terms[-1][1] == _LAST_TERM:
        if len(terms) > 1 and terms[-2][1] == _PAIR_TERM:
            terms.pop()
        else:
            prefix = True
    return Phrase(tuple(term for term, _ in terms), prefix)


def query_phrases(query: str, match: MatchMode) -> list[Phrase]:
    """What a query looks for: one phrase of all its words (``match="phrase"``) or one per
    word (``all`` / ``any``); raises ``ValueError`` when it has no words."""
    if not isinstance(query, str):
        raise TypeError(f"a search query must be a string, got {type(query).__name__}")
    folded = fold(query)
    parts = [folded] if match == "phrase" else _WORD.findall(folded)
    found = [p for p in (_phrase(part) for part in parts) if p is not None]
    if not found:
        raise ValueError(f"the search query {query!r} has no words to look for (letters or digits)")
    return found


def query_words(query: str) -> list[str]:
    """Every term of a query's phrases (see :func:`query_phrases`); raises ``ValueError`` when
    it has none."""
    return [term for phrase in query_phrases(query, "all") for term in phrase.terms]


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


def matches(text_terms: Sequence[str], phrases: Sequence[Phrase], match: MatchMode) -> bool:
    """Whether a message with ``text_terms`` (from :func:`words`) matches the query's
    ``phrases`` (from :func:`query_phrases`)."""
    if match == "any":
        return any(p.found_in(text_terms) for p in phrases)
    return all(p.found_in(text_terms) for p in phrases)


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
    try:
        wanted = {t for p in query_phrases(query, "any") for t in p.terms}
    except ValueError:
        wanted = set()
    start = 0
    for found in _WORD.finditer(flat):
        word = found.group()
        if fold(word) in wanted:
            start = found.start()
            break
        if not word.isascii() and _CJK.search(word) is not None:
            at = next(
                (
                    i
                    for i in range(len(word))
                    if fold(word[i : i + 2]) in wanted or fold(word[i]) in wanted
                ),
                -1,
            )
            if at >= 0:
                start = found.start() + at
                break
    left = max(0, min(start - width // 3, len(flat) - width))
    piece = flat[left : left + width]
    return ("…" if left > 0 else "") + piece + ("…" if left + width < len(flat) else "")
