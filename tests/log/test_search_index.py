"""Search indexes: the same matching rules on every backend, per-user separation, ordering."""

from __future__ import annotations

import importlib.util
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harnessed import Msg
from harnessed.log import NewRecord, SearchIndex, SessionRecord
from harnessed.messages import ToolUseBlock
from harnessed.runtime import SessionRef
from harnessed.stores import (
    IndexedSessionLogStore,
    JsonlSessionLogStore,
    ScanSearchIndex,
    SqliteSearchIndex,
    TantivySearchIndex,
)
from tests.support.postgres import postgres_store

HAS_TANTIVY = importlib.util.find_spec("tantivy") is not None
BASE = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def msg_record(msg: Msg, minute: int) -> NewRecord:
    stamp = (BASE + timedelta(minutes=minute)).isoformat()
    return NewRecord("message", {"message": msg.to_dict()}, run_id="r", timestamp=stamp)


def make_index(kind: str, root: Path, store: JsonlSessionLogStore) -> SearchIndex:
    if kind == "sqlite":
        return SqliteSearchIndex(root)
    if kind == "tantivy":
        return TantivySearchIndex(root)
    return ScanSearchIndex(store)


BACKENDS = [
    "sqlite",
    pytest.param(
        "tantivy", marks=pytest.mark.skipif(not HAS_TANTIVY, reason="tantivy not installed")
    ),
    "scan",
    "postgres",
]


@pytest.fixture(params=BACKENDS)
async def log(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[IndexedSessionLogStore]:
    if request.param == "postgres":
        async for pg in postgres_store():
            indexed = IndexedSessionLogStore(pg.session_log(), pg.search_index())
            await _fill(indexed)
            yield indexed
            await indexed.close()
        return
    store = JsonlSessionLogStore(tmp_path)
    indexed = IndexedSessionLogStore(store, make_index(request.param, tmp_path, store))
    await _fill(indexed)
    yield indexed
    await indexed.close()


async def _fill(indexed: IndexedSessionLogStore) -> None:
    alice1 = SessionRef("agent", "alice", "s1")
    alice2 = SessionRef("agent", "alice", "s2")
    bob = SessionRef("agent", "bob", "s1")
    await indexed.append(
        alice1,
        [
            msg_record(Msg.user("The database migration failed on Friday"), 1),
            NewRecord("run/start", {"note": "database"}),  # not a message: never found
            msg_record(Msg.assistant("I will look at the Café logs"), 2),
        ],
    )
    call = Msg.assistant([ToolUseBlock("c1", "read_file", {"path": "notes/todo.md"})])
    await indexed.append(
        alice2,
        [
            msg_record(Msg.user("migration plan for the database, please"), 3),
            msg_record(call, 4),
            msg_record(Msg.tool_result("c1", "database_url = postgres://x", name="read_file"), 5),
        ],
    )
    await indexed.append(bob, [msg_record(Msg.user("bob's database migration secret"), 6)])


def found(hits: list) -> list[tuple[str, int]]:
    return [(h.session_id, h.seq) for h in hits]


async def test_phrase_all_and_any(log: IndexedSessionLogStore) -> None:
    assert found(await log.search("agent", "alice", "database migration")) == [("s1", 1)]
    assert found(await log.search("agent", "alice", "database migration", match="all")) == [
        ("s2", 1),
        ("s1", 1),
    ]
    hits = await log.search("agent", "alice", "friday postgres", match="any")
    assert found(hits) == [("s2", 3), ("s1", 1)]
    assert await log.search("agent", "alice", "migration database") == []


async def test_case_accents_and_punctuation_are_ignored(log: IndexedSessionLogStore) -> None:
    assert found(await log.search("agent", "alice", "CAFE")) == [("s1", 3)]
    assert found(await log.search("agent", "alice", "café logs!")) == [("s1", 3)]
    # underscores separate words, as in the log text "database_url"
    assert found(await log.search("agent", "alice", "database url")) == [("s2", 3)]


async def test_tool_calls_and_results_are_searchable(log: IndexedSessionLogStore) -> None:
    hits = await log.search("agent", "alice", "notes todo md")
    assert found(hits) == [("s2", 2)]
    result = (await log.search("agent", "alice", "postgres"))[0]
    assert result.role == "tool" and result.name == "read_file"
    assert result.text == "database_url = postgres://x"
    assert result.timestamp.startswith("2025-03-01T12:05")


async def test_newest_first_and_limits(log: IndexedSessionLogStore) -> None:
    hits = await log.search("agent", "alice", "database", match="any")
    assert found(hits) == [("s2", 3), ("s2", 1), ("s1", 1)]
    assert found(await log.search("agent", "alice", "database", max_results=2)) == [
        ("s2", 3),
        ("s2", 1),
    ]
    only = await log.search("agent", "alice", "database", session_id="s1")
    assert found(only) == [("s1", 1)]
    best = await log.search("agent", "alice", "database", order="relevance", max_results=3)
    assert sorted(found(best)) == [("s1", 1), ("s2", 1), ("s2", 3)]


async def test_users_never_see_each_other(log: IndexedSessionLogStore) -> None:
    assert found(await log.search("agent", "bob", "database migration")) == [("s1", 1)]
    assert await log.search("agent", "bob", "friday") == []
    assert await log.search("agent", "alice", "secret") == []
    assert await log.search("agent", "carol", "database") == []
    assert await log.search("other-agent", "alice", "database") == []


async def test_bad_queries_name_the_problem(log: IndexedSessionLogStore) -> None:
    with pytest.raises(ValueError, match="no words"):
        await log.search("agent", "alice", "  ?! ")
    with pytest.raises(ValueError, match="max_results"):
        await log.search("agent", "alice", "database", max_results=0)
    with pytest.raises(ValueError, match="match must be"):
        await log.search("agent", "alice", "database", match="fuzzy")  # type: ignore[arg-type]
    # quotes and FTS operators are just words, never syntax
    assert await log.search("agent", "alice", 'database" OR "x') == []
    assert await log.search("agent", "alice", "NEAR(database") == []
    assert found(await log.search("agent", "alice", "*database*")) == [
        ("s2", 3),
        ("s2", 1),
        ("s1", 1),
    ]


async def test_rebuild_gives_the_same_answers(log: IndexedSessionLogStore) -> None:
    before = found(await log.search("agent", "alice", "database", match="any"))
    assert await log.rebuild("agent") == 6  # alice 5 messages + bob 1
    assert found(await log.search("agent", "alice", "database", match="any")) == before
    assert found(await log.search("agent", "bob", "secret")) == [("s1", 1)]


@pytest.mark.parametrize(
    "kind", [k for k in ("sqlite", "tantivy") if k != "tantivy" or HAS_TANTIVY]
)
async def test_add_is_idempotent_and_stops_at_gaps(kind: str, tmp_path: Path) -> None:
    index = make_index(kind, tmp_path, JsonlSessionLogStore(tmp_path))
    key = SessionRef("a", "u", "s")
    recs = [
        SessionRecord.assign(i, msg_record(Msg.user(f"word{i} common"), i)) for i in range(1, 6)
    ]
    assert await index.add(key, recs[:2]) == 2
    assert await index.add(key, recs[:2]) == 2  # again: nothing twice
    assert await index.add(key, recs[3:]) == 2  # seq 4 does not follow 2: refused
    assert await index.indexed_through(key) == 2
    assert await index.add(key, recs[1:]) == 5
    hits = await index.search("a", "u", "common", max_results=10)
    assert [h.seq for h in hits] == [5, 4, 3, 2, 1]
    await index.close()


async def test_sqlite_messages_of_the_same_microsecond_all_stay(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path)
    stamp = BASE.isoformat()
    key = SessionRef("a", "u", "s")
    records = [
        SessionRecord.assign(
            i, NewRecord("message", {"message": Msg.user(f"same {i}").to_dict()}, timestamp=stamp)
        )
        for i in range(1, 4)
    ]
    await index.add(key, records)
    assert sorted(h.seq for h in await index.search("a", "u", "same")) == [1, 2, 3]
    await index.close()


async def test_sqlite_index_lives_beside_the_users_logs(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path)
    await index.add(
        SessionRef("a", "u/1", "s"), [SessionRecord.assign(1, msg_record(Msg.user("x y"), 1))]
    )
    path = tmp_path / "a" / "sessions" / "u%2F1" / "index.sqlite3"
    assert index.path_for("a", "u/1") == path and path.is_file()
    await index.close()
    with pytest.raises(ValueError, match="tokenizer"):
        await SqliteSearchIndex(tmp_path, tokenizer="trigram").search("a", "u/1", "x")
    assert sqlite3.connect(path).execute("SELECT count(*) FROM messages").fetchone() == (1,)


async def test_sqlite_trigram_finds_parts_of_words(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path, tokenizer="trigram")
    key = SessionRef("a", "u", "s")
    await index.add(key, [SessionRecord.assign(1, msg_record(Msg.user("数据库迁移失败了"), 1))])
    assert [h.seq for h in await index.search("a", "u", "数据库")] == [1]
    await index.close()


async def test_sqlite_writes_per_append_do_not_grow_with_the_index(tmp_path: Path) -> None:
    """After a bulk catch-up of a long history, a small append writes a small amount (no
    merging of the bulk's segments on the hot path, no checkpoint of its write-ahead log)."""
    store = JsonlSessionLogStore(tmp_path)
    key = SessionRef("agent", "user-1", "s1")
    words = " ".join(f"word{i}" for i in range(60))
    for first in range(0, 6_000, 1_000):
        await store.append(
            key, [msg_record(Msg.user(f"{words} {i}"), i) for i in range(first, first + 1_000)]
        )
    index = SqliteSearchIndex(tmp_path)
    log = IndexedSessionLogStore(store, index)
    await log.append(key, [msg_record(Msg.user("first of the live appends"), 9_000)])
    assert await index.indexed_through(key) == 6_001  # caught up in one go
    sizes = []
    for i in range(60):
        before = _written()
        await log.append(key, [msg_record(Msg.user(f"live {words} {i}"), 9_001 + i)])
        sizes.append(_written() - before)
    assert sum(sizes) < 3_000_000, sizes
    hits = await log.search("agent", "user-1", "word7 word8")
    assert len(hits) == 10
    await log.close()


def _written() -> int:
    """Bytes this process has handed to ``write()`` so far (all threads)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


async def test_phrases_in_long_messages_are_found(
    log: IndexedSessionLogStore,
) -> None:
    """Phrases past the 16,383rd word or after a word's 256th use are found (PostgreSQL's
    position limits must not decide what a phrase is)."""
    key = SessionRef("agent", "carol", "long")
    long_text = "filler " * 17_000 + "rare phrase here"
    repeated = "tick " * 300 + "tock boom"
    await log.append(
        key,
        [
            msg_record(Msg.user(long_text), 10),
            msg_record(Msg.user(repeated), 11),
            msg_record(Msg.user("here phrase rare, reversed"), 12),
        ],
    )
    assert found(await log.search("agent", "carol", "rare phrase here")) == [("long", 1)]
    assert found(await log.search("agent", "carol", "tick tock boom")) == [("long", 2)]
    assert found(await log.search("agent", "carol", "phrase rare")) == [("long", 3)]
    assert found(await log.search("agent", "carol", "rare here", match="all")) == [
        ("long", 3),
        ("long", 1),
    ]
    # many candidates that fail the text check still leave room for the real hits
    await log.append(
        key, [msg_record(Msg.user("here " * 300 + "rare phrase"), 13 + i) for i in range(30)]
    )
    hits = await log.search("agent", "carol", "rare phrase here", max_results=3)
    assert found(hits) == [("long", 1)]
