"""Durable appends: concurrent appends share writes and fsyncs (group commit)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harnessed._internal.group_commit import Failed, GroupCommit
from harnessed.log import NewRecord, SessionInfo, SessionRecord
from harnessed.messages import Msg
from harnessed.runtime import SessionRef
from harnessed.stores import IndexedSessionLogStore, JsonlSessionLogStore, SqliteSearchIndex

KEY = SessionRef("a", "u", "s")


def record(i: int) -> NewRecord:
    return NewRecord.message(Msg.user(f"note {i}"), run_id="r", turn_id=None)


async def test_concurrent_durable_appends_share_fsyncs_and_keep_the_sequence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fsyncs = 0
    real = os.fsync

    def counting(fd: int) -> None:
        nonlocal fsyncs
        fsyncs += 1
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    store = JsonlSessionLogStore(tmp_path, durable=True)
    results = await asyncio.gather(*(store.append(KEY, [record(i), record(i)]) for i in range(200)))
    seqs = sorted(r.seq for stored in results for r in stored)
    assert seqs == list(range(1, 401))
    for stored in results:  # each append's records stay together, in order
        assert stored[1].seq == stored[0].seq + 1
        text = stored[0].payload["message"]["content"][0]["text"]
        assert stored[1].payload["message"]["content"][0]["text"] == text
    assert fsyncs < 100  # 200 appends, far fewer fsyncs (+1 for the new file's directory)
    again = await JsonlSessionLogStore(tmp_path).read(KEY)
    assert [r.seq for r in again] == list(range(1, 401))


async def test_a_failed_group_write_fails_every_append_of_the_group(tmp_path: Path) -> None:
    store = JsonlSessionLogStore(tmp_path / "blocked", durable=True)
    (tmp_path / "blocked").write_text("a file where the directory should be")
    results = await asyncio.gather(
        *(store.append(KEY, [record(i)]) for i in range(5)), return_exceptions=True
    )
    assert all(isinstance(r, OSError) for r in results)


async def test_concurrent_appends_reach_the_index_without_gaps(tmp_path: Path) -> None:
    store = JsonlSessionLogStore(tmp_path, durable=True)
    reads: list[int] = []
    original = store.read

    async def spy(key: SessionRef, **kw: Any) -> Any:
        reads.append(kw.get("after_seq", 0))
        return await original(key, **kw)

    store.read = spy  # type: ignore[method-assign]
    indexed = IndexedSessionLogStore(store, SqliteSearchIndex(tmp_path))
    await asyncio.gather(*(indexed.append(KEY, [record(i)]) for i in range(100)))
    assert await indexed.index.indexed_through(KEY) == 100
    assert reads == []  # no catching up: every group arrived in order
    hits = await indexed.search("a", "u", "note 42")
    assert [h.text for h in hits] == ["note 42"]
    await indexed.close()


class OneByOne:
    """A store that appends one call at a time (no ``append_batch``): the index path of any
    store other than the JSONL one."""

    def __init__(self, store: JsonlSessionLogStore) -> None:
        self.store = store

    async def append(self, key: SessionRef, records: Sequence[NewRecord]) -> list[SessionRecord]:
        return await self.store.append(key, records)

    async def read(self, key: SessionRef, **kw: Any) -> list[SessionRecord]:
        return await self.store.read(key, **kw)

    async def tail(self, key: SessionRef, count: int, **kw: Any) -> list[SessionRecord]:
        return await self.store.tail(key, count, **kw)

    async def sessions(self, agent_id: str, user_id: str) -> list[SessionInfo]:
        return await self.store.sessions(agent_id, user_id)


def indexed_store(
    root: Path, batched: bool, fail: bool
) -> tuple[IndexedSessionLogStore, SqliteSearchIndex, list[int]]:
    """A durable indexed store whose grouped index writes are recorded (the number of sessions
    of each), or all fail; ``batched``: over the JSONL store itself, else one by one."""
    jsonl = JsonlSessionLogStore(root, durable=True)
    index = SqliteSearchIndex(root)
    groups: list[int] = []
    if batched:  # written in the thread that logged the batch
        original = index.add_many_blocking

        def blocking(agent_id: str, user_id: str, batches: Any) -> list[int]:
            groups.append(len(batches))
            if fail:
                raise OSError("disk full")
            return original(agent_id, user_id, batches)

        index.add_many_blocking = blocking  # type: ignore[method-assign]
    else:
        original_async = index.add_many

        async def spy(agent_id: str, user_id: str, batches: Any) -> list[int]:
            groups.append(len(batches))
            if fail:
                raise OSError("disk full")
            return await original_async(agent_id, user_id, batches)

        index.add_many = spy  # type: ignore[method-assign]
    return IndexedSessionLogStore(jsonl if batched else OneByOne(jsonl), index), index, groups


@pytest.mark.parametrize("batched", [True, False], ids=["batch store", "one by one"])
async def test_concurrent_appends_to_many_sessions_of_a_user_are_indexed_together(
    tmp_path: Path, batched: bool
) -> None:
    indexed, index, groups = indexed_store(tmp_path, batched, fail=False)
    keys = [SessionRef("a", "u", f"s{i}") for i in range(8)]
    await asyncio.gather(*(indexed.append(keys[i % 8], [record(i)]) for i in range(200)))
    for key in keys:
        assert await index.indexed_through(key) == 25
    assert max(groups) > 1  # sessions shared a transaction
    hits = await indexed.search("a", "u", "note 137")
    assert [(h.session_id, h.text) for h in hits] == [("s1", "note 137")]
    await indexed.close()


@pytest.mark.parametrize("batched", [True, False], ids=["batch store", "one by one"])
async def test_a_failed_group_write_indexes_each_session_on_its_own(
    tmp_path: Path, batched: bool
) -> None:
    indexed, index, groups = indexed_store(tmp_path, batched, fail=True)
    keys = [SessionRef("a", "u", f"s{i}") for i in range(4)]
    await asyncio.gather(*(indexed.append(keys[i % 4], [record(i)]) for i in range(40)))
    assert max(groups) > 1  # a shared transaction was tried and failed
    for key in keys:
        assert await index.indexed_through(key) == 10
    await indexed.close()


async def test_a_lone_append_goes_out_at_once_and_the_rest_in_one_batch() -> None:
    batches: list[list[int]] = []

    async def write(key: object, items: list[int]) -> list[int | Failed]:
        batches.append(items)
        await asyncio.sleep(0.01)  # a write in progress: what arrives meanwhile waits
        return [Failed(ValueError(f"odd {i}")) if i % 2 else i * 10 for i in items]

    group: GroupCommit[int, int] = GroupCommit(write)
    assert await group.submit("k", 2) == 20
    submits = [group.submit("k", i) for i in range(6)]
    results = await asyncio.gather(*submits, return_exceptions=True)
    assert batches == [[2], [0], [1, 2, 3, 4, 5]]  # one at once, the others together
    assert [r if isinstance(r, int) else str(r) for r in results] == [
        0,
        "odd 1",
        20,
        "odd 3",
        40,
        "odd 5",
    ]  # each item gets its own result or its own failure
    with pytest.raises(ValueError, match="odd 7"):
        await group.submit("k", 7)  # a lone item's failure is its caller's
