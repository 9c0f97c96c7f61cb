"""The JSONL session log: gapless sequences, crash safety, concurrent writers."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harnessed.log import NewRecord, SessionLogStore
from harnessed.runtime import SessionRef
from harnessed.stores import InMemorySessionLogStore, JsonlSessionLogStore
from tests.support.postgres import postgres_store

KEY = SessionRef("agent", "user-1", "s1")


def rec(i: int, kind: str = "note") -> NewRecord:
    return NewRecord(kind, {"i": i, "text": f"record {i}"}, run_id="r", turn_id="t")


@pytest.fixture(params=["jsonl", "memory", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionLogStore]:
    if request.param == "jsonl":
        yield JsonlSessionLogStore(tmp_path)
    elif request.param == "memory":
        yield InMemorySessionLogStore()
    else:
        async for pg in postgres_store():
            yield pg.session_log()


async def test_append_assigns_gapless_sequence_and_reads_back(store: SessionLogStore) -> None:
    first = await store.append(KEY, [rec(1), rec(2)])
    second = await store.append(KEY, [rec(3, "other")])
    assert [r.seq for r in first + second] == [1, 2, 3]
    records = await store.read(KEY)
    assert [r.payload["i"] for r in records] == [1, 2, 3]
    assert [r.seq for r in await store.read(KEY, after_seq=1)] == [2, 3]
    assert [r.seq for r in await store.read(KEY, types=["other"])] == [3]
    assert [r.seq for r in await store.tail(KEY, 2)] == [2, 3]
    assert records[0].run_id == "r" and records[0].turn_id == "t" and records[0].event_id


async def test_sessions_are_listed_per_user(store: SessionLogStore) -> None:
    await store.append(SessionRef("agent", "alice", "a1"), [rec(1)])
    await store.append(SessionRef("agent", "alice", "a/2"), [rec(1)])
    await store.append(SessionRef("agent", "bob", "b1"), [rec(1)])
    assert sorted(s.session_id for s in await store.sessions("agent", "alice")) == ["a/2", "a1"]
    assert [s.session_id for s in await store.sessions("agent", "bob")] == ["b1"]
    assert await store.sessions("agent", "carol") == []


async def test_concurrent_appends_never_interleave_or_reuse_a_seq(store: SessionLogStore) -> None:
    await asyncio.gather(*(store.append(KEY, [rec(i), rec(i)]) for i in range(50)))
    records = await store.read(KEY)
    assert [r.seq for r in records] == list(range(1, 101))
    # each append's two records stay together
    pairs = [(records[i].payload["i"], records[i + 1].payload["i"]) for i in range(0, 100, 2)]
    assert all(a == b for a, b in pairs)


async def test_a_torn_last_line_is_ignored_and_the_sequence_continues(tmp_path: Path) -> None:
    store = JsonlSessionLogStore(tmp_path)
    await store.append(KEY, [rec(1), rec(2), rec(3)])
    path = store.path_for(KEY)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 25])  # a crash in the middle of writing record 3
    fresh = JsonlSessionLogStore(tmp_path)  # a new process after the crash
    assert [r.seq for r in await fresh.read(KEY)] == [1, 2]
    appended = await fresh.append(KEY, [rec(4)])
    assert appended[0].seq == 3
    assert [(r.seq, r.payload["i"]) for r in await fresh.read(KEY)] == [(1, 1), (2, 2), (3, 4)]
    lines = path.read_text().splitlines()
    assert len(lines) == 4  # the torn fragment stays on its own line, never glued to a record
    with pytest.raises(json.JSONDecodeError):
        json.loads(lines[2])


async def test_a_corrupt_line_in_the_middle_is_skipped(tmp_path: Path) -> None:
    store = JsonlSessionLogStore(tmp_path)
    await store.append(KEY, [rec(1)])
    with store.path_for(KEY).open("a") as handle:
        handle.write("{not json}\n")
    await store.append(KEY, [rec(2)])
    assert [r.seq for r in await store.read(KEY)] == [1, 2]


async def test_ids_cannot_escape_the_root(tmp_path: Path) -> None:
    store = JsonlSessionLogStore(tmp_path / "agents")
    key = SessionRef("../x", "../../etc", "../passwd")
    await store.append(key, [rec(1)])
    path = store.path_for(key).resolve()
    assert path.is_relative_to((tmp_path / "agents").resolve())
    assert [s.session_id for s in await store.sessions("../x", "../../etc")] == ["../passwd"]


def _writer(root: str, worker: int, count: int) -> None:
    async def run() -> None:
        store = JsonlSessionLogStore(root)
        for i in range(count):
            await store.append(KEY, [NewRecord("note", {"worker": worker, "i": i})])

    asyncio.run(run())


def test_two_processes_writing_one_session_produce_a_gapless_sequence(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_writer, args=(str(tmp_path), w, 100)) for w in (1, 2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(60)
        assert p.exitcode == 0
    records = asyncio.run(JsonlSessionLogStore(tmp_path).read(KEY))
    assert [r.seq for r in records] == list(range(1, 201))
    for worker in (1, 2):
        mine = [r.payload["i"] for r in records if r.payload["worker"] == worker]
        assert mine == list(range(100))


async def test_a_torn_line_is_reported_once_not_on_every_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonlSessionLogStore(tmp_path)
    await store.append(KEY, [rec(1), rec(2)])
    path = store.path_for(KEY)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 10])
    fresh = JsonlSessionLogStore(tmp_path)
    with caplog.at_level("WARNING", logger="harnessed.stores.local.jsonl"):
        for _ in range(5):
            assert [r.seq for r in await fresh.read(KEY)] == [1]
        await fresh.append(KEY, [rec(3)])  # fences the torn line
        for _ in range(5):
            assert [r.seq for r in await fresh.read(KEY)] == [1, 2]
    warnings = [r.getMessage() for r in caplog.records if "unreadable line" in r.getMessage()]
    assert len(warnings) == 1 and "line 2" in warnings[0] and "torn" in warnings[0]


async def test_reading_after_a_seq_reads_only_what_follows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = JsonlSessionLogStore(tmp_path)
    for first in range(0, 3_000, 500):
        await writer.append(KEY, [rec(i) for i in range(first, first + 500)])
    path = writer.path_for(KEY)
    lines = path.read_bytes().split(b"\n")
    lines[1_700] = b'{"broken'  # a damaged line in the middle is skipped, as on a full read
    path.write_bytes(b"\n".join(lines))
    everything = await JsonlSessionLogStore(tmp_path).read(KEY)
    assert len(everything) == 2_999
    for after in (0, 1, 900, 1_700, 1_701, 2_990, 2_999, 3_000, 5_000):
        fresh = JsonlSessionLogStore(tmp_path)  # knows nothing of the file yet
        assert await fresh.read(KEY, after_seq=after) == [r for r in everything if r.seq > after]

    read: list[int] = []
    original = Path.open

    def counting(self: Path, *args: object, **kwargs: object) -> object:
        handle = original(self, *args, **kwargs)  # type: ignore[call-overload]
        real = handle.read

        def counted(size: int = -1) -> bytes:
            data = real(size)
            read.append(len(data))
            return data

        handle.read = counted
        return handle

    monkeypatch.setattr(Path, "open", counting)
    tail = await JsonlSessionLogStore(tmp_path).read(KEY, after_seq=2_990)
    assert [r.seq for r in tail] == list(range(2_991, 3_001))
    assert sum(read) < path.stat().st_size / 4
