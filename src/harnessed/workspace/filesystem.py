"""The ``Filesystem`` protocol and the typed results its operations return.

Every method is async and takes a workspace-relative POSIX path (``"notes/a.md"``; ``""`` or
``"."`` is the root). Paths pass the shared policy of :mod:`harnessed.workspace.paths` before
anything touches storage, so the same call is refused the same way on every backend.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "DEFAULT_PAGE_CHARS",
    "DEFAULT_PAGE_LINES",
    "EditResult",
    "FileInfo",
    "Filesystem",
    "GrepMatch",
    "LinePage",
]

DEFAULT_PAGE_LINES = 2_000
"""Lines per :meth:`Filesystem.read_lines` page unless asked otherwise."""

DEFAULT_PAGE_CHARS = 50_000
"""Characters per page: a page stops early rather than grow past this."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One entry of a listing, or the answer to :meth:`Filesystem.stat`."""

    path: str
    """Workspace-relative path (``""`` for the root)."""
    is_dir: bool
    size: int = 0
    """Size in bytes (0 for directories)."""
    modified: float | None = None
    """Last modification as a POSIX timestamp, when the backend knows it."""

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


@dataclass(frozen=True, slots=True)
class GrepMatch:
    """A line that matched a :meth:`Filesystem.grep` pattern."""

    path: str
    line_number: int
    """1-based line number within the file."""
    line: str
    """The line without its newline; very long lines are clipped around the match."""


@dataclass(frozen=True, slots=True)
class EditResult:
    """What :meth:`Filesystem.edit` changed."""

    path: str
    replacements: int


@dataclass(frozen=True, slots=True)
class LinePage:
    """A window of lines read from a text file without loading the whole file.

    ``lines`` start at line ``offset + 1`` and carry no newline characters. A page stops at the
    requested line count or at the character budget, whichever comes first; a single line longer
    than the whole budget is cut (``clipped``) and the page ends after it.
    """

    path: str
    offset: int
    lines: tuple[str, ...]
    next_offset: int | None
    """Offset to ask for to continue, or ``None`` when the file ends with this page."""
    total_lines: int | None = None
    """Lines in the whole file, when it was cheap to count (small or local files)."""
    clipped: bool = False
    """The last line of the page was longer than the page budget and is shown only in part."""
    binary: bool = False
    """The file looks binary (it has NUL bytes near its start); ``lines`` is then empty."""

    @property
    def has_more(self) -> bool:
        return self.next_offset is not None

    @property
    def first_line(self) -> int:
        """1-based number of the first line of the page."""
        return self.offset + 1


@runtime_checkable
class Filesystem(Protocol):
    """Async file access confined to one workspace.

    Errors are the classes of :mod:`harnessed.workspace.errors`: a path outside the workspace,
    a missing file, a directory where a file was expected, and an edit that cannot apply.
    """

    @property
    def appends_in_place(self) -> bool:
        """True when :meth:`append_text` appends without rewriting the file.

        Object stores (S3 ...) rewrite the whole object on append; append-only data (session
        logs) should be written as separate segment objects there (see
        :class:`~harnessed.workspace.appendlog.AppendLog`).
        """
        ...

    def normalize(self, path: str) -> str:
        """Apply the path policy and return the workspace-relative path (``""`` for the root)."""
        ...

    async def read(self, path: str) -> bytes: ...

    async def read_text(self, path: str, *, encoding: str = "utf-8") -> str: ...

    async def write(self, path: str, data: bytes | str) -> None:
        """Create or replace a file (parents are created; the replacement is atomic)."""
        ...

    async def write_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None: ...

    async def append_text(self, path: str, text: str, *, encoding: str = "utf-8") -> None:
        """Append to a file, creating it when missing."""
        ...

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> EditResult:
        """Replace ``old`` with ``new``; ``old`` must occur exactly once unless ``replace_all``."""
        ...

    async def ls(self, path: str = "") -> list[FileInfo]:
        """Direct children of a directory, sorted by path."""
        ...

    async def glob(
        self, pattern: str, path: str = "", *, limit: int | None = None
    ) -> list[FileInfo]:
        """Files under ``path`` whose path relative to ``path`` matches ``pattern``, sorted."""
        ...

    async def list_tree(self, path: str = "") -> list[str]:
        """Paths of every file below ``path``, sorted (``[]`` when it does not exist)."""
        ...

    async def grep(
        self,
        pattern: str,
        path: str = "",
        *,
        glob: str | None = None,
        ignore_case: bool = False,
        limit: int | None = None,
    ) -> list[GrepMatch]:
        """Lines matching the regular expression ``pattern`` in a file or under a directory.

        ``glob`` filters the files searched (a pattern without ``/`` matches file names).
        Binary files are skipped. Raises ``ValueError`` for an invalid expression.
        """
        ...

    async def exists(self, path: str) -> bool: ...

    async def stat(self, path: str) -> FileInfo: ...

    async def size(self, path: str) -> int: ...

    async def delete(self, path: str, *, recursive: bool = False) -> None:
        """Remove a file, or a directory with ``recursive=True``."""
        ...

    async def mkdir(self, path: str) -> None:
        """Create a directory and its parents (nothing to do on object stores)."""
        ...

    async def read_lines(
        self,
        path: str,
        offset: int = 0,
        limit: int = DEFAULT_PAGE_LINES,
        *,
        max_chars: int = DEFAULT_PAGE_CHARS,
    ) -> LinePage:
        """Read up to ``limit`` lines after skipping ``offset``, streaming the file."""
        ...
