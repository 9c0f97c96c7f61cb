"""The indexing store: the log is the truth, the index catches up whatever happens to it."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Sequence
from pathlib import Path

import pytest

from harnessed import HarnessAgent, Msg, RuntimeContext
from harnessed.log import NewRecord, SessionRecord
from harnessed.models import ScriptedModel
from harnessed.runtime import SessionRef
from harnessed.stores import (
    IndexedSessionLogStore,
    InMemorySessionLogStore,
    JsonlSessionLogStore,
    SqliteSearchIndex,
)

KEY = SessionRef("agent", "u", "s")


def said(text: str) -> NewRecord:
    return NewRecord.message(Msg.user(text), run_id="r", turn_id="t")


class FlakyIndex(SqliteSearchIndex):
    """Fails the next ``failures`` adds, as a full disk or a locked database would."""

    failures = 0

    def _fail(self) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("disk full")

    async def add(self, key: SessionRef, records: Sequence[SessionRecord]) -> int:
        self._fail()
        return await super().add(key, records)

    def add_many_blocking(
        self, agent_id: str, user_id: str, batches: Sequence[tuple[str, Sequence[SessionRecord]]]
    ) -> list[int]:
        self._fail()  # the write of a batch, in the thread that logged it
        return super().add_many_blocking(agent_id, user_id, batches)


async def test_a_failed_index_write_never_fails_the_append(tmp_path: Path) -> None:
    index = FlakyIndex(tmp_path)
    log = IndexedSessionLogStore(JsonlSessionLogStore(tmp_path), index)
    await log.append(KEY, [said("alpha one")])
    index.failures = 1
    stored = await log.append(KEY, [said("alpha two")])
    assert stored[0].seq == 2  # the log has it
    assert [r.seq for r in await log.read(KEY)] == [1, 2]
    assert await index.indexed_through(KEY) == 1  # the index does not, yet
    hits = await log.search("agent", "u", "alpha")  # caught up before searching
    assert [h.seq for h in hits] == [2, 1]
    await log.close()


async def test_the_next_append_fills_a_gap_left_by_a_failure(tmp_path: Path) -> None:
    index = FlakyIndex(tmp_path)
    log = IndexedSessionLogStore(JsonlSessionLogStore(tmp_path), index)
    index.failures = 1
    await log.append(KEY, [said("beta one")])
    await log.append(KEY, [said("beta two")])
    assert await index.indexed_through(KEY) == 2
    assert [h.seq for h in await index.search("agent", "u", "beta")] == [2, 1]
    await log.close()


async def test_records_written_by_a_plain_store_are_found(tmp_path: Path) -> None:
    plain = JsonlSessionLogStore(tmp_path)  # e.g. a workspace from before search existed
    await plain.append(KEY, [said("gamma old")])
    await plain.append(SessionRef("agent", "u", "s2"), [said("gamma other session")])
    log = IndexedSessionLogStore(JsonlSessionLogStore(tmp_path), SqliteSearchIndex(tmp_path))
    hits = await log.search("agent", "u", "gamma")  # first search builds the user's index
    assert sorted((h.session_id, h.seq) for h in hits) == [("s", 1), ("s2", 1)]
    await plain.append(KEY, [said("gamma newer")])  # written around the index again
    await log.append(KEY, [said("delta")])  # the gap is noticed and filled
    assert sorted(h.seq for h in await log.search("agent", "u", "gamma", session_id="s")) == [
        1,
        2,
    ]
    await log.close()


async def test_concurrent_appends_are_all_indexed(tmp_path: Path) -> None:
    log = IndexedSessionLogStore(JsonlSessionLogStore(tmp_path), SqliteSearchIndex(tmp_path))
    await asyncio.gather(*(log.append(KEY, [said(f"epsilon {i}")]) for i in range(40)))
    hits = await log.search("agent", "u", "epsilon", max_results=100)
    assert sorted(h.seq for h in hits) == list(range(1, 41))
    await log.close()


def _writer(root: str, worker: int, count: int) -> None:
    async def run() -> None:
        log = IndexedSessionLogStore(JsonlSessionLogStore(root), SqliteSearchIndex(root))
        for i in range(count):
            await log.append(KEY, [said(f"zeta worker{worker} item{i}")])
        await log.close()

    asyncio.run(run())


def test_two_processes_share_the_log_and_the_index(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_writer, args=(str(tmp_path), w, 30)) for w in (1, 2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(60)
        assert p.exitcode == 0

    async def check() -> None:
        log = IndexedSessionLogStore(JsonlSessionLogStore(tmp_path), SqliteSearchIndex(tmp_path))
        assert [r.seq for r in await log.read(KEY)] == list(range(1, 61))
        hits = await log.index.search("agent", "u", "zeta", max_results=100)
        assert sorted(h.seq for h in hits) == list(range(1, 61))
        await log.close()

    asyncio.run(check())


async def test_rebuild_every_user_needs_a_store_that_lists_users(tmp_path: Path) -> None:
    log = IndexedSessionLogStore(InMemorySessionLogStore(), SqliteSearchIndex(tmp_path))
    await log.append(SessionRef("agent", "a", "s"), [said("eta")])
    await log.append(SessionRef("agent", "b", "s"), [said("eta theta")])
    assert await log.users("agent") == ["a", "b"]
    assert await log.rebuild("agent") == 2
    assert await log.rebuild("agent", "b") == 1

    class Bare:
        async def append(self, key: SessionRef, records: Sequence[NewRecord]) -> list:
            return []

    with pytest.raises(TypeError, match="already indexed"):
        IndexedSessionLogStore(log, SqliteSearchIndex(tmp_path))
    bare = IndexedSessionLogStore(Bare(), SqliteSearchIndex(tmp_path))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot list users"):
        await bare.rebuild("agent")
    await log.close()


async def test_an_agent_takes_any_store_and_index(tmp_path: Path) -> None:
    store = InMemorySessionLogStore()
    index = SqliteSearchIndex(tmp_path / "index")
    agent = HarnessAgent(
        "a", ScriptedModel(["pong"]), workspace=tmp_path, session_store=store, search_index=index
    )
    assert agent.session_store.store is store and agent.session_store.index is index
    await agent.call("ping kappa", RuntimeContext("u", "s"))
    assert [h.text for h in await agent.session_search("kappa", "u")] == ["ping kappa"]
    assert (tmp_path / "index" / "a" / "sessions" / "u" / "index.sqlite3").is_file()
    ready = IndexedSessionLogStore(InMemorySessionLogStore(), SqliteSearchIndex(tmp_path / "x"))
    assert HarnessAgent("b", ScriptedModel(), session_store=ready).session_store is ready
    with pytest.raises(ValueError, match="not both"):
        HarnessAgent("b", ScriptedModel(), session_store=ready, search_index=index)
    await agent.close()
