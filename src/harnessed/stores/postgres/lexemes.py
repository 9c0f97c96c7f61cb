"""Exact ``tsvector`` and ``tsquery`` values for the shared word rules.

PostgreSQL's own text parser splits and folds text its own way (``x²`` is two words to it,
``½`` none). So the words are made here, by :func:`harnessed.log.search.words` — the rules
every backend follows — and written as ``tsvector`` / ``tsquery`` literals that PostgreSQL
takes as they are: the index holds exactly our words at their positions.

A ``tsvector`` keeps positions only up to 16,383 and at most 256 per word, so phrases in a
longer message cannot be told by positions. Such a message is stored with its words but
without positions, plus the marker word :data:`INEXACT` (no real word: words never contain
``_``); a phrase query also accepts a marked message that has all the phrase's words, and the
caller checks those candidates against the text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from harnessed.log.record import SessionRecord
from harnessed.log.search import MatchMode, Phrase, indexable, timestamp_micros, words
from harnessed.messages import clean_text
from harnessed.runtime import SessionRef

__all__ = [
    "INEXACT",
    "INSERT_SEARCH_ROW",
    "db_text",
    "search_fields",
    "search_row",
    "tsquery",
    "tsvector",
]

INEXACT = "_inexact"
_MAX_POSITION = 16_383
_MAX_POSITIONS_PER_WORD = 256
_MAX_WORD_CHARS = 256
"""Longer words are indexed by their first 256 characters (a lexeme holds at most 2 KB);
the text check afterwards tells them apart."""
_MAX_VECTOR_BYTES = 900_000
"""A ``tsvector`` holds at most 1 MB: distinct words beyond this budget are not indexed."""

INSERT_SEARCH_ROW = (
    "INSERT INTO harnessed_search"
    " (agent_id, user_id, session_id, seq, ts_micros, ts, role, name, body, words)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector)"
    " ON CONFLICT DO NOTHING"
)


def db_text(text: str) -> str:
    """Text PostgreSQL accepts: no NUL characters, no lone surrogates."""
    return clean_text(text).replace("\x00", "\ufffd")


def _lexeme(word: str) -> str:
    word = word[:_MAX_WORD_CHARS]
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(text_words: Sequence[str]) -> str:
    """The ``tsvector`` literal of a message's words (see the module note on long ones)."""
    counts = Counter(w[:_MAX_WORD_CHARS] for w in text_words)
    exact = len(text_words) <= _MAX_POSITION and all(
        n <= _MAX_POSITIONS_PER_WORD for n in counts.values()
    )
    if exact:
        positions: dict[str, list[str]] = {}
        for i, word in enumerate(text_words, start=1):
            positions.setdefault(word[:_MAX_WORD_CHARS], []).append(str(i))
        return " ".join(f"{_lexeme(w)}:{','.join(p)}" for w, p in positions.items())
    parts = [_lexeme(INEXACT)]
    size = 0
    for word in counts:
        size += len(word.encode()) + 8
        if size > _MAX_VECTOR_BYTES:
            break
        parts.append(_lexeme(word))
    return " ".join(parts)


def _phrase_query(phrase: Phrase) -> str:
    lexemes = [_lexeme(t) for t in phrase.terms]
    if phrase.prefix:
        lexemes[-1] += ":*"
    if len(lexemes) == 1:
        return lexemes[0]
    exact = " <-> ".join(lexemes)
    return f"( ( {exact} ) | ( {' & '.join(lexemes)} & {_lexeme(INEXACT)} ) )"


def tsquery(phrases: Sequence[Phrase], match: MatchMode) -> str:
    """The ``tsquery`` literal that finds every message matching ``phrases`` (maybe more);
    a last single CJK character is a prefix (``'迁':*``)."""
    return (" | " if match == "any" else " & ").join(_phrase_query(p) for p in phrases)


def search_fields(record: SessionRecord) -> tuple[Any, ...] | None:
    """``(ts_micros, ts, role, name, body, words)`` of a searchable record, else ``None``."""
    found = indexable(record)
    if found is None:
        return None
    role, text, name = found
    stamp = record.timestamp
    return (timestamp_micros(stamp), stamp, role, name, db_text(text), tsvector(words(text)))


def search_row(key: SessionRef, record: SessionRecord) -> tuple[Any, ...] | None:
    """The ``harnessed_search`` row of a searchable record (``None`` for the others)."""
    fields = search_fields(record)
    if fields is None:
        return None
    return (key.agent_id, key.user_id, key.session_id, record.seq, *fields)
