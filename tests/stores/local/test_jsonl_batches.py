"""Batched appends of the JSONL store: many sessions share a hand-off, a write per file and
the fsyncs; each append is durable when it returns, and fails alone when its file does."""

from __future__ import annotations

import asyncio
import errno
import multiprocessing
import os
from pathlib import Path

import pytest

from harnessed.log import NewRecord, SessionRecord
from harnessed.messages import Msg
from harnessed.runtime import SessionRef
from harnessed.stores import IndexedSessionLogStore, JsonlSessionLogStore, SqliteSearchIndex


def note(i: int, who: str = "") -> NewRecord:
    return NewRecord.message(Msg.user(f"note {who}{i}"), run_id="r", turn_id=None)


def end_of(path: Path, seq: int) -> int:
    """The byte offset just after the line of record ``seq`` in ``path``."""
    offset = 0
    with path.open("rb") as handle:
        for line in handle:
            offset += len(line)
            if line.startswith(f'{{"seq":{seq},'.encode()):
                return offset
    raise AssertionError(f"record {seq} is not in {path}")


class SyncWatch:
    """Wraps ``os.fsync``: remembers how far each file was synced, and fails the files it is
    told to fail."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.synced: dict[str, int] = {}
        self.calls = 0
        self.failing: set[str] = set()
        real = os.fsync

        def fsync(fd: int) -> None:
            self.calls += 1
            name = os.readlink(f"/proc/self/fd/{fd}")
            if name in self.failing:
                raise OSError(errno.EIO, "injected I/O error", name)
            size = os.fstat(fd).st_size
            real(fd)
            self.synced[name] = max(self.synced.get(name, 0), size)

        monkeypatch.setattr(os, "fsync", fsync)


async def test_concurrent_appends_to_many_sessions_are_durable_when_they_return(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch = SyncWatch(monkeypatch)
    store = JsonlSessionLogStore(tmp_path, durable=True)
    keys = [SessionRef("a", f"u{i % 3}", f"s{i}") for i in range(12)]
    unsynced: list[tuple[SessionRef, int]] = []

    async def writer(w: int) -> list[tuple[SessionRef, list[SessionRecord]]]:
        out = []
        for i in range(10):
            key = keys[(w + i) % len(keys)]
            stored = await store.append(key, [note(i, f"w{w}-"), note(i, f"w{w}b-")])
            path = str(store.path_for(key))
            if watch.synced.get(path, 0) < end_of(Path(path), stored[-1].seq):
                unsynced.append((key, stored[-1].seq))  # returned before its bytes were synced
            out.append((key, stored))
        return out

    results = await asyncio.gather(*(writer(w) for w in range(48)))
    assert unsynced == []
    assert watch.calls < 48 * 10 / 2  # batches shared fsyncs (+1 per new file's directory)
    fresh = JsonlSessionLogStore(tmp_path)  # what a restarted process reads
    for key in keys:
        records = await fresh.read(key)
        assert [r.seq for r in records] == list(range(1, len(records) + 1))
    logged = {(k, r.seq): r.event_id for k in keys for r in await fresh.read(k)}
    acknowledged = {(k, r.seq): r.event_id for out in results for k, st in out for r in st}
    assert acknowledged == logged  # every acknowledged record once, nothing else
    for out in results:  # an append's records stay together, in order
        for _, stored in out:
            assert stored[1].seq == stored[0].seq + 1


async def test_a_failed_fsync_fails_exactly_the_appends_of_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch = SyncWatch(monkeypatch)
    store = JsonlSessionLogStore(tmp_path, durable=True)
    good = [SessionRef("a", "u", f"good{i}") for i in range(3)]
    bad = SessionRef("a", "u", "bad")
    for key in [*good, bad]:  # the files exist (and are synced) before the fault
        await store.append(key, [note(0)])
    watch.failing.add(str(store.path_for(bad)))

    appends = [(good[i % 3], i) for i in range(30)] + [(bad, i) for i in range(10)]
    results = await asyncio.gather(
        *(store.append(key, [note(i)]) for key, i in appends), return_exceptions=True
    )
    for (key, _), result in zip(appends, results, strict=True):
        if key == bad:
            assert isinstance(result, OSError) and result.errno == errno.EIO
        else:
            assert isinstance(result, list)
    for key in good:  # nothing acknowledged is lost, and each good session is gapless
        assert [r.seq for r in await JsonlSessionLogStore(tmp_path).read(key)] == list(range(1, 12))

    watch.failing.clear()  # the disk recovers: the session goes on after what its file holds
    stored = await store.append(bad, [note(99)])
    records = await JsonlSessionLogStore(tmp_path).read(bad)
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    assert records[-1].seq == stored[0].seq


async def test_an_id_that_cannot_name_a_file_fails_only_its_own_append(tmp_path: Path) -> None:
    store = JsonlSessionLogStore(tmp_path, durable=True)
    ok = SessionRef("a", "u", "fine")
    results = await asyncio.gather(
        store.append(ok, [note(1)]),
        store.append(SessionRef("a", "u", "x" * 300), [note(2)]),  # too long for a file name
        store.append(ok, [note(3)]),
        return_exceptions=True,
    )
    assert isinstance(results[1], OSError)
    assert [[r.seq for r in stored] for stored in (results[0], results[2])] == [[1], [2]]


async def test_batches_of_many_users_are_indexed_per_user(tmp_path: Path) -> None:
    log = IndexedSessionLogStore(
        JsonlSessionLogStore(tmp_path, durable=True), SqliteSearchIndex(tmp_path)
    )
    keys = [SessionRef("a", f"user{u}", f"s{s}") for u in range(3) for s in range(4)]
    await asyncio.gather(*(log.append(keys[i % 12], [note(i)]) for i in range(240)))
    for key in keys:
        assert await log.index.indexed_through(key) == 20
    hits = await log.search("a", "user1", "note 17")  # message 17 went to user1's session s1
    assert [(h.session_id, h.text) for h in hits] == [("s1", "note 17")]
    assert await log.search("a", "user0", "note 17") == []  # one user never sees another's
    await log.close()


def _batch_writer(root: str, worker: int, rounds: int) -> None:
    async def run() -> None:
        store = JsonlSessionLogStore(root, durable=True)
        keys = [SessionRef("a", "u", f"s{i}") for i in range(4)]

        async def one(task: int) -> None:
            for i in range(rounds):
                key = keys[(task + i) % 4]
                await store.append(key, [NewRecord("note", {"w": worker, "t": task, "i": i})])

        await asyncio.gather(*(one(t) for t in range(8)))

    asyncio.run(run())


def test_processes_writing_batches_keep_every_session_gapless(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_batch_writer, args=(str(tmp_path), w, 25)) for w in (1, 2, 3)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(120)
        assert p.exitcode == 0

    async def read_all() -> list[list[SessionRecord]]:
        store = JsonlSessionLogStore(tmp_path)
        return [await store.read(SessionRef("a", "u", f"s{i}")) for i in range(4)]

    sessions = asyncio.run(read_all())
    seen = set()
    for records in sessions:
        assert [r.seq for r in records] == list(range(1, len(records) + 1))
        for r in records:
            seen.add((r.payload["w"], r.payload["t"], r.payload["i"]))
    assert len(seen) == sum(len(records) for records in sessions) == 3 * 8 * 25
    for records in sessions:  # one task's records of a session keep their order
        for w in (1, 2, 3):
            for t in range(8):
                mine = [
                    r.payload["i"] for r in records if (r.payload["w"], r.payload["t"]) == (w, t)
                ]
                assert mine == sorted(mine)


async def test_a_read_of_nothing_new_is_answered_without_a_worker_thread(tmp_path, monkeypatch):
    """A warm session asks "anything appended since?" on every call: when the file has not
    grown since this store's last write, one stat answers; when another writer appended, the
    news is read as before."""
    import asyncio as aio

    from harnessed.log import NewRecord
    from harnessed.messages import Msg
    from harnessed.runtime import SessionRef
    from harnessed.stores import JsonlSessionLogStore

    key = SessionRef("a", "u", "s")
    mine, other = JsonlSessionLogStore(tmp_path), JsonlSessionLogStore(tmp_path)
    stored = await mine.append(key, [NewRecord.message(Msg.user("one"), run_id="r", turn_id="t")])
    handoffs: list[object] = []
    real = aio.to_thread

    async def counting(fn, /, *args, **kwargs):
        handoffs.append(fn)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr("harnessed.stores.local.jsonl.asyncio.to_thread", counting)
    assert await mine.read(key, after_seq=stored[-1].seq) == []
    assert handoffs == []
    await other.append(key, [NewRecord.message(Msg.user("two"), run_id="r", turn_id="t")])
    news = await mine.read(key, after_seq=stored[-1].seq)
    assert [r.message.text for r in news if r.message] == ["two"]
