"""MemoryFilesystem: disk-like directory rules without a disk."""

from __future__ import annotations

import asyncio

import pytest

from harnessed.workspace import (
    EditError,
    FileNotFoundInWorkspaceError,
    Filesystem,
    IsADirectoryInWorkspaceError,
    MemoryFilesystem,
    NotADirectoryInWorkspaceError,
    PathOutsideWorkspaceError,
)


def test_is_a_filesystem() -> None:
    assert isinstance(MemoryFilesystem(), Filesystem)


async def test_seeded_files_and_implied_directories() -> None:
    fs = MemoryFilesystem({"a/b/c.txt": "x", "top.bin": b"\x00"})
    assert [(i.path, i.is_dir) for i in await fs.ls("")] == [("a", True), ("top.bin", False)]
    assert [i.path for i in await fs.ls("a")] == ["a/b"]
    assert await fs.read_text("a/b/c.txt") == "x"
    assert (await fs.stat("a/b")).is_dir
    with pytest.raises(PathOutsideWorkspaceError):
        MemoryFilesystem({"../evil": "x"})


async def test_directories_outlive_their_files_until_deleted() -> None:
    fs = MemoryFilesystem({"d/f.txt": "x"})
    await fs.delete("d/f.txt")
    assert await fs.exists("d") and await fs.ls("d") == []
    await fs.mkdir("d/e/f")
    await fs.delete("d", recursive=True)
    assert not await fs.exists("d") and not await fs.exists("d/e/f")


async def test_files_cannot_have_children() -> None:
    fs = MemoryFilesystem({"f": "x"})
    with pytest.raises(NotADirectoryInWorkspaceError, match="'f' is a file"):
        await fs.write_text("f/g", "y")
    with pytest.raises(NotADirectoryInWorkspaceError):
        await fs.mkdir("f/g")
    with pytest.raises(NotADirectoryInWorkspaceError):
        await fs.ls("f")
    with pytest.raises(IsADirectoryInWorkspaceError):
        await fs.write_text("", "x")
    await fs.mkdir("dir")
    with pytest.raises(IsADirectoryInWorkspaceError):
        await fs.read("dir")
    with pytest.raises(FileNotFoundInWorkspaceError):
        await fs.read("nope")


async def test_concurrent_appends_and_edits_lose_nothing() -> None:
    fs = MemoryFilesystem({"log.md": ""})
    await asyncio.gather(*(fs.append_text("log.md", f"{i}\n") for i in range(50)))
    assert sorted(int(x) for x in (await fs.read_text("log.md")).split()) == list(range(50))
    await fs.write_text("c.txt", "a b c")
    await asyncio.gather(fs.edit("c.txt", "a", "1"), fs.edit("c.txt", "b", "2"))
    assert await fs.read_text("c.txt") == "1 2 c"


async def test_edit_errors() -> None:
    fs = MemoryFilesystem({"t.txt": "x x", "bin": b"\xff\xfe"})
    with pytest.raises(EditError, match="occurs 2 times"):
        await fs.edit("t.txt", "x", "y")
    with pytest.raises(EditError, match="not found"):
        await fs.edit("t.txt", "z", "y")
    with pytest.raises(ValueError, match="not UTF-8"):
        await fs.edit("bin", "a", "b")
    assert (await fs.edit("t.txt", "x", "y", replace_all=True)).replacements == 2


async def test_glob_and_grep() -> None:
    fs = MemoryFilesystem(
        {"a.md": "Hello\n", "docs/b.md": "hello world\n", "docs/deep/c.txt": "HELLO\n"}
    )
    assert [i.path for i in await fs.glob("**/*.md")] == ["a.md", "docs/b.md"]
    assert [i.path for i in await fs.glob("*", "docs")] == ["docs/b.md"]
    assert [i.path for i in await fs.glob("deep/*.txt", "docs")] == ["docs/deep/c.txt"]
    assert await fs.glob("nothing-here/*.md", "docs") == []
    with pytest.raises(FileNotFoundInWorkspaceError, match="docs/nothing-here"):
        await fs.glob("*.md", "docs/nothing-here")
    found = await fs.grep("hello", ignore_case=True)
    assert [(m.path, m.line_number) for m in found] == [
        ("a.md", 1),
        ("docs/b.md", 1),
        ("docs/deep/c.txt", 1),
    ]
    assert len(await fs.grep("hello", ignore_case=True, limit=2)) == 2
    assert [m.path for m in await fs.grep("^h", glob="docs/**")] == ["docs/b.md"]
    with pytest.raises(ValueError, match="invalid regular expression"):
        await fs.grep("[")


async def test_list_tree() -> None:
    fs = MemoryFilesystem({"knowledge/a.md": "", "knowledge/sub/b.md": "", "other.md": ""})
    assert await fs.list_tree("knowledge") == ["knowledge/a.md", "knowledge/sub/b.md"]
    assert await fs.list_tree("") == ["knowledge/a.md", "knowledge/sub/b.md", "other.md"]
    assert await fs.list_tree("missing") == []
    assert await fs.list_tree("other.md") == ["other.md"]
