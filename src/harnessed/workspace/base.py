"""``BaseFilesystem``: the async operations, built once on a few blocking primitives.

A backend implements ``_info``, ``_list_dir``, ``_walk``, ``_read``, ``_write``, ``_delete``,
``_makedirs`` and ``_open`` (all synchronous, taking already-normalized workspace-relative
paths); this class turns them into the :class:`~harnessed.workspace.filesystem.Filesystem`
protocol. Blocking calls run through :meth:`_run` (``asyncio.to_thread`` unless the backend
says otherwise). Read-modify-write operations (``edit``, ``append_text``) hold a per-path lock
so concurrent calls on one filesystem object never lose an update.
"""

from __future__ import annotations

import abc
import asyncio
import posixpath
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import BinaryIO, ParamSpec, TypeVar

from harnessed.runtime import SessionLocks
from harnessed.workspace import paths
from harnessed.workspace.errors import (
    FileNotFoundInWorkspaceError,
    IsADirectoryInWorkspaceError,
    NotADirectoryInWorkspaceError,
)
from harnessed.workspace.filesystem import (
    DEFAULT_PAGE_CHARS,
    DEFAULT_PAGE_LINES,
    EditResult,
    FileInfo,
    GrepMatch,
    LinePage,
)
from harnessed.workspace.textscan import apply_edit, grep_stream, scan_page

__all__ = ["BaseFilesystem", "LinkCheck"]

P = ParamSpec("P")
T = TypeVar("T")

LinkCheck = Callable[[str, str], None]
"""Called as ``check(link, reached)`` for every symbolic link a walk follows: ``link`` is where
the link lies (workspace-relative), ``reached`` the whole path the walk goes on with (the
link's target joined with the rest of the path asked for). A listing or a walk that starts
through a link calls it again with the real path of each entry it would show. It raises to
refuse. Workspaces use it so that no link leads into or lies in the harness's runtime data, and
views so that no link, and no chain of links, leads where the caller may not go."""


class BaseFilesystem(abc.ABC):
    """Shared implementation of the Filesystem protocol; subclass and fill in the primitives."""

    count_lines_max_bytes: int = 256 << 20
    """Pages of files up to this size report the file's total line count."""
    metadata_inline: bool = False
    """Look up a path's metadata (``exists``, ``stat``) on the calling thread: for back ends
    where that is a few system calls on local disk, far cheaper than a hand-off to a worker
    thread (~90 µs). Everything else runs in a worker thread."""

    def __init__(self) -> None:
        self._locks = SessionLocks()

    @property
    def appends_in_place(self) -> bool:
        return True

    # ------------------------------------------------------------ primitives
    @abc.abstractmethod
    def _info(self, rel: str) -> FileInfo | None:
        """Stat ``rel``; ``None`` when nothing is there."""

    @abc.abstractmethod
    def _list_dir(self, rel: str) -> list[FileInfo]:
        """Direct children of the directory ``rel`` (it is known to be a directory)."""

    @abc.abstractmethod
    def _walk(self, rel: str) -> Iterator[FileInfo]:
        """Every file below the directory ``rel`` (recursively, in any order)."""

    @abc.abstractmethod
    def _read(self, rel: str) -> bytes:
        """The bytes of the file ``rel`` (it is known to be a file)."""

    @abc.abstractmethod
    def _write(self, rel: str, data: bytes) -> None:
        """Create or atomically replace the file ``rel``, creating parents."""

    @abc.abstractmethod
    def _delete(self, rel: str, is_dir: bool) -> None:
        """Remove the file or (recursively) the directory ``rel``."""

    @abc.abstractmethod
    def _makedirs(self, rel: str) -> None:
        """Create the directory ``rel`` and its parents."""

    @abc.abstractmethod
    def _open(self, rel: str) -> AbstractContextManager[BinaryIO]:
        """Open the file ``rel`` for streaming binary reads."""

    def _append(self, rel: str, data: bytes) -> None:
        """Append to ``rel``; the default rewrites the file (the caller holds the path lock)."""
        info = self._info(rel)
        self._write(rel, (self._read(rel) if info is not None else b"") + data)

    async def _run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a blocking primitive; backends without real I/O may call it inline."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    def with_link_check(self, link_check: LinkCheck) -> BaseFilesystem:
        """This filesystem (same files, same edit locks) with every symbolic link it follows
        checked by ``link_check`` as well as by the checks it already has (see
        :data:`LinkCheck`). Backends without links (memory, object stores) return themselves."""
        return self

    # ------------------------------------------------------------ helpers
    def normalize(self, path: str) -> str:
        return paths.normalize_path(path)

    def real_path(self, path: str) -> str:
        """The workspace path ``path`` really names, after following the symbolic links of
        the part that exists (a guard keyed on paths must ask about this one, not the path
        given). Backends without links return the normalized path."""
        return self.normalize(path)

    def _require_file(self, rel: str, action: str = "read") -> FileInfo:
        info = self._info(rel)
        if info is None:
            raise FileNotFoundInWorkspaceError(rel)
        if info.is_dir:
            raise IsADirectoryInWorkspaceError(rel, action)
        return info

    def _require_dir(self, rel: str, action: str = "list") -> None:
        info = self._info(rel)
        if info is None:
            if rel == "":
                return  # an empty workspace (e.g. a fresh S3 prefix) is still a directory
            raise FileNotFoundInWorkspaceError(rel)
        if not info.is_dir:
            raise NotADirectoryInWorkspaceError(rel, action)

    def _check_writable(self, rel: str) -> None:
        if rel == "":
            raise IsADirectoryInWorkspaceError(rel, "write")
        info = self._info(rel)
        if info is not None and info.is_dir:
            raise IsADirectoryInWorkspaceError(rel, "write")

    # ------------------------------------------------------------ reading
    async def read(self, path: str) -> bytes:
        rel = self.normalize(path)

        def read() -> bytes:
            self._require_file(rel)
            return self._read(rel)

        return await self._run(read)

    async def read_text(self, path: str, *, encoding: str = "utf-8") -> str:
        return (await self.read(path)).decode(encoding, errors="replace")

    async def _lookup(self, rel: str) -> FileInfo | None:
        if self.metadata_inline:
            return self._info(rel)
        return await self._run(self._info, rel)

    async def exists(self, path: str) -> bool:
        return await self._lookup(self.normalize(path)) is not None

    async def stat(self, path: str) -> FileInfo:
        rel = self.normalize(path)
        info = await self._lookup(rel)
        if info is None:
            raise FileNotFoundInWorkspaceError(rel)
        return info

    async def size(self, path: str) -> int:
        return (await self.stat(path)).size

    async def read_lines(
        self,
        path: str,
        offset: int = 0,
        limit: int = DEFAULT_PAGE_LINES,
        *,
        max_chars: int = DEFAULT_PAGE_CHARS,
    ) -> LinePage:
        if offset < 0:
            raise ValueError(f"offset must be 0 or more, got {offset}")
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        if max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, got {max_chars}")
        rel = self.normalize(path)

        def page() -> LinePage:
            info = self._require_file(rel)
            with self._open(rel) as stream:
                return scan_page(
                    stream,
                    path=rel,
                    offset=offset,
                    limit=limit,
                    max_chars=max_chars,
                    count_rest=info.size <= self.count_lines_max_bytes,
                )

        return await self._run(page)

    async def ls(self, path: str = "") -> list[FileInfo]:
        rel = self.normalize(path)

        def listing() -> list[FileInfo]:
            self._require_dir(rel)
            return sorted(self._list_dir(rel), key=lambda i: i.path)

        return await self._run(listing)

    async def glob(
        self, pattern: str, path: str = "", *, limit: int | None = None
    ) -> list[FileInfo]:
        rel = self.normalize(path)
        clean = paths.normalize_pattern(pattern)
        regex = paths.glob_to_regex(clean)
        start = paths.join(rel, paths.glob_literal_prefix(clean))

        def matches() -> list[FileInfo]:
            self._require_dir(rel)
            info = self._info(start)
            if info is None or not info.is_dir:
                return []
            found = [
                f for f in self._walk(start) if regex.match(_relative_to(f.path, rel)) is not None
            ]
            found.sort(key=lambda i: i.path)
            return found if limit is None else found[:limit]

        return await self._run(matches)

    async def list_tree(self, path: str = "") -> list[str]:
        rel = self.normalize(path)

        def tree() -> list[str]:
            info = self._info(rel)
            if info is None:
                return []
            if not info.is_dir:
                return [rel]
            return sorted(f.path for f in self._walk(rel))

        return await self._run(tree)

    async def grep(
        self,
        pattern: str,
        path: str = "",
        *,
        glob: str | None = None,
        ignore_case: bool = False,
        limit: int | None = None,
    ) -> list[GrepMatch]:
        rel = self.normalize(path)
        try:
            regex = re.compile(pattern, re.MULTILINE | (re.IGNORECASE if ignore_case else 0))
        except re.error as exc:
            raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from exc
        name_filter = _file_filter(glob)

        def search() -> list[GrepMatch]:
            info = self._info(rel)
            if info is None:
                raise FileNotFoundInWorkspaceError(rel)
            files = [info] if not info.is_dir else sorted(self._walk(rel), key=lambda i: i.path)
            found: list[GrepMatch] = []
            for file in files:
                if info.is_dir and not name_filter(_relative_to(file.path, rel)):
                    continue
                room = None if limit is None else limit - len(found)
                if room is not None and room <= 0:
                    break
                try:
                    with self._open(file.path) as stream:
                        found.extend(grep_stream(stream, regex, path=file.path, limit=room))
                except (FileNotFoundError, IsADirectoryError, PermissionError):
                    continue  # vanished, or a link we may not follow: skip it like grep -s
            return found

        return await self._run(search)

    # ------------------------------------------------------------ writing
    async def write(self, path: str, data: bytes | str) -> None:
        rel = self.normalize(path)
        payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)

        def write() -> None:
            self._check_writable(rel)
            self._write(rel, payload)

        await self._run(write)

    async def write_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        await self.write(path, text.encode(encoding))

    async def append_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        rel = self.normalize(path)
        payload = text.encode(encoding)

        def append() -> None:
            self._check_writable(rel)
            self._append(rel, payload)

        async with self._locks.hold(rel):
            await self._run(append)

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> EditResult:
        rel = self.normalize(path)

        def edit() -> EditResult:
            self._require_file(rel, "edit")
            text = self._read(rel).decode("utf-8", errors="strict")
            updated, count = apply_edit(text, old, new, replace_all=replace_all, path=rel)
            self._write(rel, updated.encode("utf-8"))
            return EditResult(rel, count)

        async with self._locks.hold(rel):
            try:
                return await self._run(edit)
            except UnicodeDecodeError as exc:
                raise ValueError(f"cannot edit {rel!r}: it is not UTF-8 text ({exc})") from exc

    async def delete(self, path: str, *, recursive: bool = False) -> None:
        rel = self.normalize(path)

        def delete() -> None:
            if rel == "":
                raise IsADirectoryInWorkspaceError(rel, "delete the workspace root")
            info = self._info(rel)
            if info is None:
                raise FileNotFoundInWorkspaceError(rel)
            if info.is_dir and not recursive:
                raise IsADirectoryInWorkspaceError(rel, "delete (pass recursive=True)")
            self._delete(rel, info.is_dir)

        await self._run(delete)

    async def mkdir(self, path: str) -> None:
        rel = self.normalize(path)

        def mkdir() -> None:
            info = self._info(rel)
            if info is not None and not info.is_dir:
                raise NotADirectoryInWorkspaceError(rel, "create directory")
            self._makedirs(rel)

        await self._run(mkdir)


def _relative_to(path: str, base: str) -> str:
    return path[len(base) + 1 :] if base else path


def _file_filter(glob: str | None) -> Callable[[str], bool]:
    """A predicate on paths relative to the search root; patterns without ``/`` match names."""
    if not glob:
        return lambda _path: True
    clean = paths.normalize_pattern(glob)
    regex = paths.glob_to_regex(clean)
    if "/" not in clean:
        return lambda p: regex.match(posixpath.basename(p)) is not None
    return lambda p: regex.match(p) is not None
