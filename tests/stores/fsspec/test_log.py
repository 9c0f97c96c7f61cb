"""Session logs on workspace filesystems: in memory, fsspec ``memory://`` and real S3."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.log import NewRecord
from harnessed.models import ScriptedModel
from harnessed.runtime import SessionRef
from harnessed.stores import FilesystemSessionLogStore
from harnessed.workspace import Filesystem, FsspecFilesystem, MemoryFilesystem
from tests.support import s3_server as s3_support
from tests.support.s3_server import S3Server

s3_server = s3_support.s3_server
KEY = SessionRef("agent", "u1", "s1")


def rec(i: int) -> NewRecord:
    return NewRecord("note", {"i": i})


@pytest.fixture(params=["memory", "fsspec-memory"])
def fs(request: pytest.FixtureRequest) -> Iterator[Filesystem]:
    if request.param == "memory":
        yield MemoryFilesystem()
    else:
        yield FsspecFilesystem(f"memory://harnessed-{uuid.uuid4().hex}")


async def test_gapless_sequence_and_reads(fs: Filesystem) -> None:
    store = FilesystemSessionLogStore(fs)
    assert [r.seq for r in await store.append(KEY, [rec(1), rec(2)])] == [1, 2]
    assert [r.seq for r in await store.append(KEY, [rec(3)])] == [3]
    assert [r.payload["i"] for r in await store.read(KEY)] == [1, 2, 3]
    assert [r.seq for r in await store.read(KEY, after_seq=1, limit=1)] == [2]
    assert [r.seq for r in await store.tail(KEY, 2)] == [2, 3]
    assert store.path_for(KEY) == "agents/agent/sessions/u1/s1.log.jsonl"
    # a second store (another process) sees the same log and continues it
    other = FilesystemSessionLogStore(fs)
    assert [r.seq for r in await other.append(KEY, [rec(4)])] == [4]
    assert [r.seq for r in await store.read(KEY)] == [1, 2, 3, 4]


async def test_object_stores_get_one_segment_per_append(fs: Filesystem) -> None:
    store = FilesystemSessionLogStore(fs)
    await store.append(KEY, [rec(1)])
    await store.append(KEY, [rec(2), rec(3)])
    folder = "agents/agent/sessions/u1/s1.log.jsonl.segments"
    if fs.appends_in_place:
        assert not await fs.exists(folder)
        assert len((await fs.read_text(store.path_for(KEY))).splitlines()) == 3
    else:
        assert len(await fs.glob("*.part", folder)) == 2
        assert not await fs.exists(store.path_for(KEY))


async def test_concurrent_appends_in_one_process_stay_gapless(fs: Filesystem) -> None:
    store = FilesystemSessionLogStore(fs)
    await asyncio.gather(*(store.append(KEY, [rec(i), rec(i)]) for i in range(30)))
    records = await FilesystemSessionLogStore(fs).read(KEY)
    assert [r.seq for r in records] == list(range(1, 61))
    assert all(records[i].payload == records[i + 1].payload for i in range(0, 60, 2))


async def test_sessions_and_users_are_listed(fs: Filesystem) -> None:
    store = FilesystemSessionLogStore(fs)
    await store.append(SessionRef("agent", "alice", "a1"), [rec(1)])
    await asyncio.sleep(0.01)
    await store.append(SessionRef("agent", "alice", "a/2"), [rec(1)])
    await store.append(SessionRef("agent", "bob", "b1"), [rec(1)])
    listed = await store.sessions("agent", "alice")
    assert [s.session_id for s in listed] == ["a/2", "a1"]  # newest first
    assert all(s.updated_at > 0 and s.size_bytes > 0 for s in listed)
    assert await store.sessions("agent", "carol") == []
    assert await store.users("agent") == ["alice", "bob"]
    assert await store.users("nobody") == []


async def test_a_torn_line_is_skipped_and_the_sequence_continues() -> None:
    fs = MemoryFilesystem()
    store = FilesystemSessionLogStore(fs)
    await store.append(KEY, [rec(1), rec(2)])
    path = store.path_for(KEY)
    data = await fs.read_text(path)
    await fs.write_text(path, data[:-10])  # a crash in the middle of record 2
    fresh = FilesystemSessionLogStore(fs)
    assert [r.seq for r in await fresh.read(KEY)] == [1]
    assert [r.seq for r in await fresh.append(KEY, [rec(3)])] == [2]
    assert [(r.seq, r.payload["i"]) for r in await fresh.read(KEY)] == [(1, 1), (2, 3)]
    assert len((await fs.read_text(path)).splitlines()) == 3  # the fragment kept on its own line


async def test_a_corrupt_segment_line_is_skipped() -> None:
    fs = FsspecFilesystem(f"memory://harnessed-{uuid.uuid4().hex}")
    store = FilesystemSessionLogStore(fs)
    await store.append(KEY, [rec(1)])
    await fs.write_text(
        "agents/agent/sessions/u1/s1.log.jsonl.segments/00000000000000000000-x.part", "{bad\n"
    )  # sorts first: the cached view is re-read from scratch
    assert [r.seq for r in await store.read(KEY)] == [1]
    assert [r.seq for r in await store.append(KEY, [rec(2)])] == [2]


async def test_an_agent_on_a_memory_workspace_keeps_its_log_there() -> None:
    url = f"memory://harnessed-{uuid.uuid4().hex}"
    agent = HarnessAgent("remote", ScriptedModel(["hello back"]), workspace=url)
    assert isinstance(agent.session_store.store, FilesystemSessionLogStore)
    ctx = RuntimeContext("u1", "s1")
    await agent.call("hello", ctx)
    again = HarnessAgent("remote", ScriptedModel(), workspace=url)  # e.g. another server
    assert [m.text for m in await again.session_messages(ctx)] == ["hello", "hello back"]
    hits = await again.session_search("hello back", "u1")
    assert [(h.session_id, h.role) for h in hits] == [("s1", "assistant")]


async def test_segments_on_real_s3(s3_server: S3Server) -> None:
    fs = FsspecFilesystem(
        s3_server.url(f"sessions-{uuid.uuid4().hex}"), **s3_server.storage_options
    )
    store = FilesystemSessionLogStore(fs)
    await store.append(KEY, [rec(1), rec(2)])
    await store.append(KEY, [rec(3)])
    records = await FilesystemSessionLogStore(fs).read(KEY)
    assert [r.seq for r in records] == [1, 2, 3]
    assert [s.session_id for s in await store.sessions("agent", "u1")] == ["s1"]
    assert not await fs.exists(store.path_for(KEY))  # never one object rewritten per append
