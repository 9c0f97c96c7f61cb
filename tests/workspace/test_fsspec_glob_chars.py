"""FsspecFilesystem passes workspace paths to fsspec calls that expand glob patterns
(``fs.rm`` → ``expand_path``), so a file whose name contains ``[`` ``*`` or ``?`` is not the
one that gets deleted: its glob matches other files instead.

src/harnessed/workspace/fsspec_fs.py:_delete (``self.fs.rm(self._full(rel), recursive=is_dir)``).
"""

import contextlib
import uuid

import fsspec
import pytest

from harnessed.workspace import FsspecFilesystem

pytestmark = pytest.mark.asyncio


@pytest.fixture
def ws():
    root = f"memory://review-{uuid.uuid4().hex}"
    yield FsspecFilesystem(root)
    with contextlib.suppress(FileNotFoundError):
        fsspec.filesystem("memory").rm(root.removeprefix("memory://"), recursive=True)


async def test_deleting_a_file_with_brackets_deletes_only_that_file(ws):
    await ws.write_text("notes/[draft].md", "keep me? no, delete me")
    await ws.write_text("notes/d.md", "must survive")
    await ws.write_text("notes/r.md", "must survive")
    await ws.delete("notes/[draft].md")
    assert not await ws.exists("notes/[draft].md"), "the file asked for was not deleted"
    assert await ws.exists("notes/d.md"), "an unrelated file matched by the glob was deleted"
    assert await ws.exists("notes/r.md")


async def test_deleting_a_file_named_star_keeps_its_siblings(ws):
    await ws.write_text("tmp/*", "odd name")
    await ws.write_text("tmp/important.txt", "must survive")
    await ws.delete("tmp/*")
    assert await ws.exists("tmp/important.txt")
