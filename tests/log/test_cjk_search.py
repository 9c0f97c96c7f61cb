# ruff: noqa: RUF001  (full-width letters and CJK punctuation are the point)
"""Search in Chinese, Japanese and Korean on every index and in memory search: the test set
of ``tests/support/cjk_search_set.py``, each expected hit found and nothing else; and indexes
an earlier release made (other terms) rebuilt on first use."""

from __future__ import annotations

import importlib.util
import re
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harnessed import HarnessAgent, Msg, RuntimeContext, ToolResultEvent
from harnessed.log import NewRecord
from harnessed.log.search import words
from harnessed.memory import MemoryConfig
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.runtime import SessionRef
from harnessed.stores import (
    IndexedSessionLogStore,
    JsonlSessionLogStore,
    ScanSearchIndex,
    SqliteSearchIndex,
    TantivySearchIndex,
)
from tests.support.cjk_search_set import CASES, MESSAGES, Case
from tests.support.postgres import postgres_store

HAS_TANTIVY = importlib.util.find_spec("tantivy") is not None
KEY = SessionRef("agent", "alice", "s1")
BACKENDS = [
    "sqlite",
    pytest.param(
        "tantivy", marks=pytest.mark.skipif(not HAS_TANTIVY, reason="tantivy not installed")
    ),
    "scan",
    "postgres",
]


def record(text: str) -> NewRecord:
    return NewRecord("message", {"message": Msg.user(text).to_dict()}, run_id="r")


async def fill(log: IndexedSessionLogStore) -> dict[int, str]:
    """One message per id, in one session; returns seq -> id."""
    ids = list(MESSAGES)
    written = await log.append(KEY, [record(MESSAGES[i]) for i in ids])
    return {r.seq: ids[n] for n, r in enumerate(written)}


@pytest.fixture(params=BACKENDS)
async def log(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[IndexedSessionLogStore]:
    if request.param == "postgres":
        async for pg in postgres_store():
            indexed = IndexedSessionLogStore(pg.session_log(), pg.search_index())
            yield indexed
            await indexed.close()
        return
    store = JsonlSessionLogStore(tmp_path)
    index = {
        "sqlite": lambda: SqliteSearchIndex(tmp_path),
        "tantivy": lambda: TantivySearchIndex(tmp_path),
        "scan": lambda: ScanSearchIndex(store),
    }[request.param]()
    indexed = IndexedSessionLogStore(store, index)
    yield indexed
    await indexed.close()


def misses(results: dict[Case, set[str]]) -> list[str]:
    return [
        f"{c.query!r} ({c.match}): found {sorted(got)}, expected {sorted(c.expected)}"
        for c, got in results.items()
        if got != c.expected
    ]


async def run_set(log: IndexedSessionLogStore, seqs: dict[int, str]) -> dict[Case, set[str]]:
    results: dict[Case, set[str]] = {}
    for c in CASES:
        hits = await log.search("agent", "alice", c.query, match=c.match, max_results=50)
        results[c] = {seqs[h.seq] for h in hits}
    return results


async def test_every_case_of_the_set_finds_exactly_its_messages(
    log: IndexedSessionLogStore,
) -> None:
    seqs = await fill(log)
    results = await run_set(log, seqs)
    assert misses(results) == []
    expected = sum(len(c.expected) for c in CASES)
    assert sum(len(got & c.expected) for c, got in results.items()) == expected


async def test_the_seeds_example_newest_first_and_by_relevance(
    log: IndexedSessionLogStore,
) -> None:
    seqs = await fill(log)
    for order in ("recent", "relevance"):
        hits = await log.search("agent", "alice", "数据库迁移", order=order)  # type: ignore[arg-type]
        assert [seqs[h.seq] for h in hits] == ["zh1"]
        assert "数据库迁移" in hits[0].snippet("数据库迁移", width=20)
    newest_first = await log.search("agent", "alice", "迁移")
    assert [seqs[h.seq] for h in newest_first] == ["zh2", "zh1"]


def test_text_and_query_share_one_rule() -> None:
    assert words("数据库迁移 ok") == ["数据", "据库", "库迁", "迁移", "移", "ok"]
    assert words("x²y ＡＢＣ Café") == ["x2y", "abc", "cafe"]
    assert words("ガ") == ["ガ"]  # voicing marks are part of the kana, not accents
    assert words("데이터") == ["데이", "이터", "터"]


# ------------------------------------------------------------------ memory search
def call(name: str, **args: object) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedToolCall(name, args)])


async def test_memory_search_finds_the_set(tmp_path: Path) -> None:
    ids = list(MESSAGES)
    (tmp_path / "MEMORY.md").write_text("".join(f"- {MESSAGES[i]}\n" for i in ids))
    # memory search looks for the query's words anywhere in a line (every word, else any):
    # phrases that must not match as a phrase are not its kind of question
    cases = [c for c in CASES if c.expected or len(c.query.split()) == 1]
    agent = HarnessAgent(
        "mem",
        ScriptedModel([*(call("memory_search", query=c.query) for c in cases), "done"]),
        workspace=tmp_path,
        memory=MemoryConfig(timezone="UTC"),
        max_iters=len(cases) + 1,
    )
    events = agent.stream_events("go", RuntimeContext("alice", "s1"))
    answers = [e.result.content async for e in events if isinstance(e, ToolResultEvent)]
    await agent.close()
    results = {
        c: {ids[int(n) - 1] for n in re.findall(r"MEMORY\.md#(\d+):", str(text))}
        for c, text in zip(cases, answers, strict=True)
    }
    assert misses(results) == []


# ------------------------------------------------------------------ old indexes
def old_sqlite_index(path: Path, text: str) -> None:
    """The database an earlier release made: the text itself, split by unicode61."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE sessions(session_id TEXT PRIMARY KEY, indexed_seq INTEGER NOT NULL);"
        "CREATE VIRTUAL TABLE messages USING fts5(text, session_id UNINDEXED, seq UNINDEXED,"
        " role UNINDEXED, name UNINDEXED, timestamp UNINDEXED,"
        " tokenize='unicode61 remove_diacritics 2');"
        "INSERT INTO meta VALUES ('version', '1'), ('tokenizer', 'unicode61 remove_diacritics 2'),"
        " ('built', '1');"
        "INSERT INTO sessions VALUES ('s1', 1);"
    )
    conn.execute(
        "INSERT INTO messages(rowid, text, session_id, seq, role, name, timestamp)"
        " VALUES (1, ?, 's1', 1, 'user', NULL, '')",
        (text,),
    )
    conn.commit()
    conn.close()


async def test_an_sqlite_index_of_an_earlier_release_is_rebuilt_on_first_search(
    tmp_path: Path,
) -> None:
    store = JsonlSessionLogStore(tmp_path)
    await store.append(KEY, [record(MESSAGES["zh1"])])
    index = SqliteSearchIndex(tmp_path)
    old_sqlite_index(index.path_for("agent", "alice"), MESSAGES["zh1"])
    log = IndexedSessionLogStore(store, index)
    try:
        hits = await log.search("agent", "alice", "迁移")
        assert [h.text for h in hits] == [MESSAGES["zh1"]]
        assert await log.search("agent", "alice", "PostgreSQL")
    finally:
        await log.close()


@pytest.mark.skipif(not HAS_TANTIVY, reason="tantivy not installed")
async def test_a_tantivy_index_of_an_earlier_release_is_rebuilt_on_first_search(
    tmp_path: Path,
) -> None:
    import tantivy

    store = JsonlSessionLogStore(tmp_path)
    await store.append(KEY, [record(MESSAGES["ko1"])])
    index = TantivySearchIndex(tmp_path)
    path = index.path_for("agent", "alice")
    path.mkdir(parents=True)
    builder = tantivy.SchemaBuilder()  # the old schema: the text field indexed, no terms
    builder.add_text_field("text", stored=True)
    builder.add_text_field("session_id", stored=True, tokenizer_name="raw")
    old = tantivy.Index(builder.build(), path=str(path))
    writer = old.writer(15_000_000, 1)
    writer.add_document(tantivy.Document(text=MESSAGES["ko1"], session_id="s1"))
    writer.commit()
    writer.wait_merging_threads()
    log = IndexedSessionLogStore(store, index)
    try:
        hits = await log.search("agent", "alice", "마이그레이션")
        assert [h.text for h in hits] == [MESSAGES["ko1"]]
    finally:
        await log.close()


async def test_postgres_rows_of_an_earlier_release_are_rebuilt_on_first_search() -> None:
    async for pg in postgres_store():
        log = IndexedSessionLogStore(pg.session_log(), pg.search_index())
        try:
            await log.append(KEY, [record(MESSAGES["ja1"])])
            async with pg.connection() as conn:  # what rows of the old rules look like
                await conn.execute(
                    "UPDATE harnessed_search SET words = to_tsvector('simple', body)"
                )
                await conn.execute("INSERT INTO harnessed_search_stale VALUES ('agent', 'alice')")
            fresh = IndexedSessionLogStore(pg.session_log(), type(pg.search_index())(pg))
            hits = await fresh.search("agent", "alice", "移行")
            assert [h.text for h in hits] == [MESSAGES["ja1"]]
            async with pg.connection() as conn:
                cursor = await conn.execute("SELECT count(*) FROM harnessed_search_stale")
                assert (await cursor.fetchone()) == (0,)
        finally:
            await log.close()
