"""``MemoryFilesystem``: a workspace held in a dict, for tests and ephemeral agents.

It follows the same path policy and the same directory rules as a real disk (writing a file
creates its parent directories, directories outlive the files in them, a file cannot hold
children), so code tested against it behaves the same on the local and remote backends.
Operations run inline on the event loop: there is no I/O to wait for.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import BinaryIO, ParamSpec, TypeVar

from harnessed.workspace.base import BaseFilesystem
from harnessed.workspace.errors import NotADirectoryInWorkspaceError
from harnessed.workspace.filesystem import FileInfo

__all__ = ["MemoryFilesystem"]

P = ParamSpec("P")
T = TypeVar("T")


class MemoryFilesystem(BaseFilesystem):
    """An in-memory workspace, optionally seeded with ``files`` (path → text or bytes)."""

    count_lines_max_bytes = 1 << 62

    def __init__(self, files: Mapping[str, str | bytes] | None = None) -> None:
        super().__init__()
        self._files: dict[str, tuple[bytes, float]] = {}
        self._dirs: set[str] = {""}
        for path, data in (files or {}).items():
            rel = self.normalize(path)
            self._write(rel, data.encode("utf-8") if isinstance(data, str) else data)

    def __repr__(self) -> str:
        return f"MemoryFilesystem({len(self._files)} files)"

    async def _run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return fn(*args, **kwargs)

    # ------------------------------------------------------------ primitives
    def _info(self, rel: str) -> FileInfo | None:
        entry = self._files.get(rel)
        if entry is not None:
            return FileInfo(rel, False, len(entry[0]), entry[1])
        if rel in self._dirs:
            return FileInfo(rel, True, 0, None)
        return None

    def _list_dir(self, rel: str) -> list[FileInfo]:
        children = [
            FileInfo(p, False, len(data), mtime)
            for p, (data, mtime) in self._files.items()
            if _parent(p) == rel
        ]
        children.extend(FileInfo(d, True) for d in self._dirs if d and _parent(d) == rel)
        return children

    def _walk(self, rel: str) -> Iterator[FileInfo]:
        prefix = f"{rel}/" if rel else ""
        for p, (data, mtime) in list(self._files.items()):
            if p.startswith(prefix):
                yield FileInfo(p, False, len(data), mtime)

    def _read(self, rel: str) -> bytes:
        return self._files[rel][0]

    def _write(self, rel: str, data: bytes) -> None:
        self._makedirs(_parent(rel), action="write", target=rel)
        self._files[rel] = (bytes(data), time.time())

    def _delete(self, rel: str, is_dir: bool) -> None:
        if not is_dir:
            del self._files[rel]
            return
        prefix = f"{rel}/"
        for p in [p for p in self._files if p.startswith(prefix)]:
            del self._files[p]
        self._dirs = {d for d in self._dirs if d != rel and not d.startswith(prefix)}

    def _makedirs(self, rel: str, *, action: str = "create directory", target: str = "") -> None:
        ancestors: list[str] = []
        current = rel
        while current and current not in self._dirs:
            if current in self._files:
                raise NotADirectoryInWorkspaceError(
                    target or rel, action, f"{current!r} is a file, not a directory"
                )
            ancestors.append(current)
            current = _parent(current)
        self._dirs.update(ancestors)

    def _open(self, rel: str) -> AbstractContextManager[BinaryIO]:
        return io.BytesIO(self._files[rel][0])


def _parent(path: str) -> str:
    return path.rpartition("/")[0]
