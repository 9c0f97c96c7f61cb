"""FsspecFilesystem on fsspec's memory:// and on a real S3 API (SeaweedFS)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import fsspec  # type: ignore[import-untyped]
import pytest

from harnessed.workspace import (
    AppendLog,
    FileNotFoundInWorkspaceError,
    Filesystem,
    FsspecFilesystem,
    LocalFilesystem,
    PathOutsideWorkspaceError,
    Workspace,
)
from tests.support import s3_server as s3_support
from tests.support.s3_server import S3Server

s3_server = s3_support.s3_server  # the session-wide SeaweedFS fixture


def s3_fs(server: S3Server, prefix: str | None = None) -> FsspecFilesystem:
    return FsspecFilesystem(
        server.url(prefix or f"fs-{uuid.uuid4().hex}"), **server.storage_options
    )


async def test_round_trip_on_s3(s3_server: S3Server) -> None:
    fs = s3_fs(s3_server)
    assert isinstance(fs, Filesystem) and not fs.appends_in_place
    assert await fs.ls("") == []  # a fresh prefix is an empty workspace
    assert await fs.exists("") and (await fs.stat("")).is_dir
    await fs.write_text("notes/a.md", "alpha\nbeta\n")
    await fs.write("data/x.bin", b"\x00\x01")
    assert await fs.read_text("notes/a.md") == "alpha\nbeta\n"
    assert [(i.path, i.is_dir) for i in await fs.ls("")] == [("data", True), ("notes", True)]
    info = await fs.stat("notes/a.md")
    assert info.size == 11 and not info.is_dir and info.modified is not None
    assert [i.path for i in await fs.glob("**/*")] == ["data/x.bin", "notes/a.md"]
    assert [(m.path, m.line_number) for m in await fs.grep("beta")] == [("notes/a.md", 2)]
    await fs.edit("notes/a.md", "beta", "gamma")
    await fs.append_text("notes/a.md", "delta\n")
    assert await fs.read_text("notes/a.md") == "alpha\ngamma\ndelta\n"
    await fs.delete("notes", recursive=True)
    assert not await fs.exists("notes/a.md")
    with pytest.raises(FileNotFoundInWorkspaceError, match=r"notes/a\.md"):
        await fs.read("notes/a.md")


async def test_prefixes_are_isolated(s3_server: S3Server) -> None:
    base = f"iso-{uuid.uuid4().hex}"
    inner = s3_fs(s3_server, f"{base}/ws")
    sibling = s3_fs(s3_server, f"{base}/ws2")
    parent = s3_fs(s3_server, base)
    await parent.write_text("secret.txt", "top secret")
    await sibling.write_text("theirs.txt", "not yours")
    await inner.write_text("mine.txt", "mine")
    assert [i.path for i in await inner.glob("**/*")] == ["mine.txt"]
    assert await inner.grep("secret|yours") == []
    for bad in ["../secret.txt", "../ws2/theirs.txt", f"/{s3_server.bucket}/{base}/secret.txt"]:
        with pytest.raises(PathOutsideWorkspaceError):
            await inner.read(bad)
    assert [i.path for i in await parent.glob("**/*.txt")] == [
        "secret.txt",
        "ws/mine.txt",
        "ws2/theirs.txt",
    ]


async def test_a_page_of_a_large_object_does_not_download_it(s3_server: S3Server) -> None:
    fs = s3_fs(s3_server)
    line = b"x" * 99 + b"\n"
    await fs.write("big.log", line * (120_000))  # 12 MB: above the line-counting limit
    started = time.perf_counter()
    page = await fs.read_lines("big.log", limit=10)
    assert time.perf_counter() - started < 2.0
    assert page.lines == ("x" * 99,) * 10 and page.next_offset == 10
    assert page.total_lines is None  # counting would mean fetching all 12 MB


async def test_append_log_uses_segments_on_object_stores(s3_server: S3Server) -> None:
    fs = s3_fs(s3_server)
    log = AppendLog(fs, "agents/a/sessions/u/s.log.jsonl")
    assert log.segmented and not await log.exists()
    for i in range(3):
        await log.append(f'{{"seq": {i}}}\n')
    await log.append("")
    assert await log.read_text() == '{"seq": 0}\n{"seq": 1}\n{"seq": 2}\n'
    segments = await log.segments()
    assert len(segments) == 3
    assert all(s.startswith("agents/a/sessions/u/s.log.jsonl.segments/") for s in segments)
    assert not await fs.exists("agents/a/sessions/u/s.log.jsonl")


async def test_append_log_appends_in_place_locally(tmp_path: Path) -> None:
    fs = LocalFilesystem(tmp_path)
    log = AppendLog(fs, "s.log.jsonl")
    assert not log.segmented
    await log.append("a\n")
    await log.append("b\n")
    assert (tmp_path / "s.log.jsonl").read_text() == "a\nb\n"
    assert await log.read_text() == "a\nb\n" and await log.exists()
    with pytest.raises(ValueError):
        AppendLog(fs, ".")


async def test_workspace_from_an_s3_url(s3_server: S3Server) -> None:
    ws = Workspace(
        s3_server.url(f"ws-{uuid.uuid4().hex}"), storage_options=s3_server.storage_options
    )
    assert isinstance(ws.fs, FsspecFilesystem) and ws.local_root is None
    await ws.fs.write_text(ws.memory_file(agent_id="a", user_id="u"), "- likes tea\n")
    assert await ws.fs.read_text("agents/a/users/u/MEMORY.md") == "- likes tea\n"


async def test_memory_url_and_existing_fs_object() -> None:
    name = f"memory://harnessed-{uuid.uuid4().hex}"
    ws = Workspace(name)
    await ws.fs.write_text("a/b.txt", "hi")
    again = FsspecFilesystem(name.removeprefix("memory:/"), fs=fsspec.filesystem("memory"))
    assert await again.read_text("a/b.txt") == "hi"
    assert [i.path for i in await again.ls("a")] == ["a/b.txt"]
