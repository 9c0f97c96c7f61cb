"""``FsspecFilesystem``: a workspace on any fsspec filesystem (``s3://bucket/prefix``, ...).

The workspace is rooted at the URL's path; every workspace path passes the shared policy and is
joined under that root, so nothing outside the prefix is reachable. Calls go through fsspec's
blocking API in a worker thread (s3fs and friends run their own event loop underneath).

Object stores have no real directories: a directory exists while something is stored under it,
and ``mkdir`` does nothing. They also cannot append, so :meth:`append_text` rewrites the object
(``appends_in_place`` is ``False``); append-only data should be written as segment objects
(:class:`~harnessed.workspace.appendlog.AppendLog` does that).

fsspec's own local filesystem (``file://``, ``local://``) follows symbolic links wherever they
lead, outside the root too. A workspace on it is therefore served by
:class:`~harnessed.workspace.local.LocalFilesystem` underneath: the same race-free walk, links
confined to the root and checked by a view like on any local directory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from harnessed.workspace.base import BaseFilesystem, LinkCheck
from harnessed.workspace.errors import FileNotFoundInWorkspaceError
from harnessed.workspace.filesystem import FileInfo
from harnessed.workspace.local import LocalFilesystem

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem  # type: ignore[import-untyped]

__all__ = ["FsspecFilesystem"]

_READ_BLOCK = 1 << 20


class FsspecFilesystem(BaseFilesystem):
    """A workspace at an fsspec URL, e.g. ``FsspecFilesystem("s3://bucket/agents", key=...)``.

    ``storage_options`` go to the fsspec filesystem (for s3fs: ``key``, ``secret``,
    ``client_kwargs={"endpoint_url": ...}``). Pass ``fs=`` to reuse an existing fsspec
    filesystem object; ``url`` is then the root path inside it.
    """

    count_lines_max_bytes = 8 << 20  # counting a whole remote file means downloading it

    def __init__(
        self, url: str, *, fs: AbstractFileSystem | None = None, **storage_options: Any
    ) -> None:
        super().__init__()
        if fs is None:
            from fsspec.core import url_to_fs  # type: ignore[import-untyped]  # slow import

            fs, root = url_to_fs(url, **storage_options)
        else:
            root = fs._strip_protocol(url)
        self.fs: AbstractFileSystem = fs
        self.url = url
        self._root: str = str(root).rstrip("/")
        self._local: LocalFilesystem | None = (
            LocalFilesystem(self._root or "/") if _is_local(fs) else None
        )
        """The directory itself, for fsspec's local filesystem (see the module docstring)."""
        if self._local is not None:
            self.count_lines_max_bytes = self._local.count_lines_max_bytes

    def __repr__(self) -> str:
        return f"FsspecFilesystem({self.url!r})"

    @property
    def appends_in_place(self) -> bool:
        return self._local is not None

    def with_link_check(self, link_check: LinkCheck) -> BaseFilesystem:
        if self._local is None:
            return self
        checked = FsspecFilesystem(self.url, fs=self.fs)
        checked._local = self._local.with_link_check(link_check)
        checked._locks = self._locks
        return checked

    def normalize(self, path: str) -> str:
        return self._local.normalize(path) if self._local is not None else super().normalize(path)

    def real_path(self, path: str) -> str:
        return self._local.real_path(path) if self._local is not None else super().real_path(path)

    # ------------------------------------------------------------ mapping
    def _full(self, rel: str) -> str:
        if not rel:
            return self._root or "/"
        return f"{self._root}/{rel}"

    def _rel(self, name: str) -> str:
        name = str(name).rstrip("/")
        prefix = f"{self._root}/"
        if name.startswith(prefix):
            return name[len(prefix) :]
        if name == self._root:
            return ""
        return name.lstrip("/")

    def _to_info(self, rel: str, raw: dict[str, Any]) -> FileInfo:
        is_dir = raw.get("type") == "directory"
        size = 0 if is_dir else int(raw.get("size") or 0)
        return FileInfo(rel, is_dir, size, _mtime(raw))

    # ------------------------------------------------------------ primitives
    def _info(self, rel: str) -> FileInfo | None:
        if self._local is not None:
            return self._local._info(rel)
        try:
            raw = self.fs.info(self._full(rel))
        except (FileNotFoundError, NotADirectoryError):
            # The root always exists, even as a prefix that holds nothing yet.
            return FileInfo("", True) if rel == "" else None
        return self._to_info(rel, cast(dict[str, Any], raw))

    def _list_dir(self, rel: str) -> list[FileInfo]:
        if self._local is not None:
            return self._local._list_dir(rel)
        try:
            entries = self.fs.ls(self._full(rel), detail=True, refresh=True)
        except FileNotFoundError:
            if rel:
                raise FileNotFoundInWorkspaceError(rel) from None
            return []
        result: list[FileInfo] = []
        for raw in entries:
            child = self._rel(raw["name"])
            if child and child != rel:
                result.append(self._to_info(child, raw))
        return result

    def _walk(self, rel: str) -> Iterator[FileInfo]:
        if self._local is not None:
            yield from self._local._walk(rel)
            return
        try:
            found = self.fs.find(self._full(rel), detail=True)
        except FileNotFoundError:
            return
        for name, raw in cast(dict[str, dict[str, Any]], found).items():
            if raw.get("type") == "directory":
                continue
            yield self._to_info(self._rel(name), raw)

    def _read(self, rel: str) -> bytes:
        if self._local is not None:
            return self._local._read(rel)
        try:
            return cast(bytes, self.fs.cat_file(self._full(rel)))
        except FileNotFoundError:
            raise FileNotFoundInWorkspaceError(rel) from None

    def _write(self, rel: str, data: bytes) -> None:
        if self._local is not None:
            return self._local._write(rel, data)
        full = self._full(rel)
        try:
            self.fs.pipe_file(full, data)
        except FileNotFoundError:
            # Filesystems with real directories (local, some others) need the parents first.
            self.fs.makedirs(full.rpartition("/")[0], exist_ok=True)
            self.fs.pipe_file(full, data)

    def _delete(self, rel: str, is_dir: bool) -> None:
        if self._local is not None:
            return self._local._delete(rel, is_dir)
        # fsspec's rm() expands glob characters; a path like "notes/[a].md" or "tmp/*" must
        # delete exactly that entry, so files go through rm_file and directories are emptied
        # entry by entry (find() takes the path literally), deepest first.
        full = self._full(rel)
        if not is_dir:
            self.fs.rm_file(full)
            return
        entries = self.fs.find(full, withdirs=True, detail=True)
        for path in sorted(entries, key=len, reverse=True):
            if path.rstrip("/") == full.rstrip("/"):
                continue
            if entries[path].get("type") == "directory":
                with contextlib.suppress(FileNotFoundError, OSError):
                    self.fs.rmdir(path)
            else:
                self.fs.rm_file(path)
        with contextlib.suppress(FileNotFoundError, OSError):
            self.fs.rmdir(full)

    def _makedirs(self, rel: str) -> None:
        if self._local is not None:
            return self._local._makedirs(rel)
        with contextlib.suppress(FileExistsError):
            self.fs.makedirs(self._full(rel), exist_ok=True)

    def _open(self, rel: str) -> AbstractContextManager[BinaryIO]:
        if self._local is not None:
            return self._local._open(rel)
        try:
            return cast(
                AbstractContextManager[BinaryIO],
                self.fs.open(self._full(rel), "rb", block_size=_READ_BLOCK),
            )
        except FileNotFoundError:
            raise FileNotFoundInWorkspaceError(rel) from None

    def _append(self, rel: str, data: bytes) -> None:
        if self._local is not None:
            return self._local._append(rel, data)
        return super()._append(rel, data)


def _is_local(fs: AbstractFileSystem) -> bool:
    """Is ``fs`` fsspec's filesystem of this machine's files (which follows any link)?"""
    from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]

    return isinstance(fs, LocalFileSystem)


def _mtime(raw: dict[str, Any]) -> float | None:
    for key in ("mtime", "LastModified", "last_modified", "created"):
        value = raw.get(key)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, int | float):
            return float(value)
    return None
