"""Session search defects (SQLite FTS5 index)."""

from __future__ import annotations

from pathlib import Path

from harnessed import Msg
from harnessed.log import NewRecord
from harnessed.runtime import SessionRef
from harnessed.stores import IndexedSessionLogStore, JsonlSessionLogStore, SqliteSearchIndex

KEY = SessionRef("agent", "u", "s")


def said(text: str) -> NewRecord:
    return NewRecord.message(Msg.user(text), run_id="r", turn_id="t")


async def test_query_folding_matches_the_fts_tokenizer(tmp_path: Path) -> None:
    """fold() casefolds + NFKD (ß -> ss, ﬁ -> fi, full width -> ascii) but unicode61 does
    not, so a query with the exact word that was logged finds nothing."""
    log = IndexedSessionLogStore(JsonlSessionLogStore(tmp_path), SqliteSearchIndex(tmp_path))
    await log.append(KEY, [said("Wir treffen uns in der Hauptstraße um neun")])
    await log.append(KEY, [said("order \uff21\uff22\uff23\uff11\uff12\uff13 shipped")])
    try:
        assert [h.seq for h in await log.search("agent", "u", "Hauptstraße")] == [1]
        assert [
            h.seq for h in await log.search("agent", "u", "\uff21\uff22\uff23\uff11\uff12\uff13")
        ] == [2]
    finally:
        await log.close()


async def test_trigram_index_finds_accented_words(tmp_path: Path) -> None:
    """With tokenizer="trigram" (documented for CJK), the query is accent-stripped by fold()
    but the trigram index keeps accents, so 'café' never matches 'café'."""
    index = SqliteSearchIndex(tmp_path, tokenizer="trigram")
    log = IndexedSessionLogStore(JsonlSessionLogStore(tmp_path), index)
    await log.append(KEY, [said("we met at the café on Monday")])
    try:
        assert [h.seq for h in await log.search("agent", "u", "café")] == [1]
    finally:
        await log.close()


async def test_index_catches_up_after_a_crash_between_log_and_index(tmp_path: Path) -> None:
    """The log got a record but the process died before indexing it (the in-memory
    ``_behind`` set is gone). After a restart a search must still find it."""
    log = IndexedSessionLogStore(JsonlSessionLogStore(tmp_path), SqliteSearchIndex(tmp_path))
    await log.append(KEY, [said("alpha first")])
    assert [h.seq for h in await log.search("agent", "u", "alpha")] == [1]
    # crash: the log write happened, the index write did not
    await log.store.append(KEY, [said("alpha second")])
    await log.close()

    restarted = IndexedSessionLogStore(JsonlSessionLogStore(tmp_path), SqliteSearchIndex(tmp_path))
    try:
        hits = await restarted.search("agent", "u", "alpha")
        assert [h.seq for h in hits] == [2, 1]
    finally:
        await restarted.close()
