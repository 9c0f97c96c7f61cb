"""Built-in file tools over a :class:`~harnessed.workspace.Workspace`.

:class:`FileToolset` (``file_tools(workspace)`` for short) holds ``read_file``, ``write_file``,
``edit_file``, ``grep_files``, ``glob_files`` and ``list_files``. Every path goes through the
workspace's filesystem, so the same confinement rules hold on every backend; a refused or
failed call becomes a :class:`~harnessed.tools.base.ToolError` whose message names the path and
the problem. Outputs are bounded: ``read_file`` pages, the listing tools cap their results and
say so, which is why the eviction of large results leaves these tools alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import TypeVar

from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.toolset import Toolset, toolset_tool
from harnessed.workspace import (
    DEFAULT_PAGE_CHARS,
    DEFAULT_PAGE_LINES,
    BaseFilesystem,
    Filesystem,
    LinePage,
    Workspace,
)
from harnessed.workspace.errors import WorkspaceError

__all__ = [
    "FILE_TOOL_NAMES",
    "FileToolset",
    "LINE_WRAP_CHARS",
    "MAX_GLOB_RESULTS",
    "MAX_GREP_MATCHES",
    "MAX_LIST_ENTRIES",
    "file_tools",
    "format_page",
]

FILE_TOOL_NAMES = (
    "read_file",
    "write_file",
    "edit_file",
    "grep_files",
    "glob_files",
    "list_files",
)
LINE_WRAP_CHARS = 2_000
"""``read_file`` shows longer lines as several rows of this many characters."""
MAX_GREP_MATCHES = 200
MAX_GREP_CHARS = 50_000
MAX_GLOB_RESULTS = 500
MAX_LIST_ENTRIES = 1_000

T = TypeVar("T")


async def _call(op: Awaitable[T]) -> T:
    """Await a filesystem call, turning its errors into tool errors the model can act on."""
    try:
        return await op
    except (WorkspaceError, ValueError, OSError) as exc:
        raise ToolError(str(exc)) from exc


def format_page(page: LinePage, wrap: int = LINE_WRAP_CHARS) -> str:
    """Render a page as numbered rows (``N`` for a line, ``N+`` for its wrapped rest)."""
    rows: list[str] = []
    for number, line in enumerate(page.lines, start=page.first_line):
        pieces = [line[i : i + wrap] for i in range(0, len(line), wrap)] or [""]
        rows.append(f"{number:>6}\t{pieces[0]}")
        rows.extend(f"{f'{number}+':>6}\t{piece}" for piece in pieces[1:])
    last = page.offset + len(page.lines)
    notes: list[str] = []
    if page.clipped:
        notes.append(
            f"[line {last} is longer than a page; only its first "
            f"{len(page.lines[-1]):,} characters are shown. Use grep_files to search in it.]"
        )
    if page.next_offset is not None:
        if page.total_lines is not None:
            left = page.total_lines - page.next_offset
            notes.append(
                f"[showing lines {page.first_line}-{last} of {page.total_lines:,}; "
                f"{left:,} more lines. Call read_file with offset={page.next_offset} to continue.]"
            )
        else:
            notes.append(
                f"[showing lines {page.first_line}-{last}; the file continues. "
                f"Call read_file with offset={page.next_offset} to continue.]"
            )
    elif page.offset > 0:
        notes.append(f"[end of file: line {last} is the last line]")
    return "\n".join(rows + notes)


def _where(fs: Filesystem, path: str) -> str:
    """The workspace-relative form of ``path`` for messages (``.`` for the root)."""
    try:
        return fs.normalize(path) or "."
    except (WorkspaceError, ValueError) as exc:
        raise ToolError(str(exc)) from exc


def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover - the loop always returns


def file_tools(
    workspace: Workspace, *, writable_instructions: bool | Sequence[str] = False
) -> list[Tool]:
    """The six file tools of a :class:`FileToolset` over ``workspace``."""
    return FileToolset(workspace, writable_instructions=writable_instructions).tools()


class FileToolset(Toolset):
    """The six file tools, bound to ``workspace`` and seeing the caller's view of it.

    Each call works on :meth:`Workspace.view` of the calling agent, user and session: shared
    files plus the caller's own scope; other users' data and the harness's runtime data cannot
    be listed, read or written, and instruction files (``AGENTS.md``, ``skills/``,
    ``subagents/``) are read-only unless ``writable_instructions``. ``read_file``,
    ``grep_files``, ``glob_files`` and ``list_files`` are read-only (plan mode lets them run);
    ``write_file`` and ``edit_file`` change files.
    """

    def __init__(
        self, workspace: Workspace, *, writable_instructions: bool | Sequence[str] = False
    ) -> None:
        if not isinstance(workspace.fs, BaseFilesystem):
            raise TypeError(
                f"the file tools need a filesystem built on BaseFilesystem; {workspace.fs!r} is "
                "not (they must be able to hide other users' data)"
            )
        self.workspace = workspace
        self.writable_instructions = writable_instructions

    def view(self, ctx: ToolContext) -> Filesystem:
        """The calling agent's, user's and session's view of the workspace."""
        return self.workspace.view(
            ctx.agent_name,
            ctx.runtime.user_id,
            ctx.runtime.session_id or ctx.agent_name,
            writable_instructions=self.writable_instructions,
        )

    @toolset_tool(read_only=True)
    async def read_file(
        self, ctx: ToolContext, path: str, offset: int = 0, limit: int = DEFAULT_PAGE_LINES
    ) -> str:
        """Read a text file, one page at a time, with line numbers.

        A line over 2,000 characters goes on in rows numbered ``N+``; a note after the page
        gives the offset to continue from.

        Args:
            path: Relative to the workspace root.
            offset: Lines to skip.
            limit: Most lines to show (a page also stops at 50,000 characters).
        """
        fs = self.view(ctx)
        if offset < 0:
            raise ToolError(f"offset must be 0 or more, got {offset}")
        if limit < 1:
            raise ToolError(f"limit must be at least 1, got {limit}")
        page = await _call(fs.read_lines(path, offset, limit, max_chars=DEFAULT_PAGE_CHARS))
        if page.binary:
            size = await _call(fs.size(path))
            raise ToolError(
                f"{page.path!r} looks like a binary file ({_human_size(size)}); "
                "read_file shows text files only"
            )
        if not page.lines:
            if offset == 0:
                return f"[{page.path} is empty]"
            total = page.total_lines if page.total_lines is not None else "fewer"
            raise ToolError(
                f"offset {offset} is past the end of {page.path!r}, which has {total} lines"
            )
        return format_page(page)

    @toolset_tool()
    async def write_file(self, ctx: ToolContext, path: str, content: str) -> str:
        """Create a file or replace all its content (parent directories are created).

        To change part of a file, prefer edit_file.

        Args:
            path: Relative to the workspace root.
        """
        fs = self.view(ctx)
        rel = _where(fs, path)
        existed = await _call(fs.exists(rel))
        await _call(fs.write_text(rel, content))
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        verb = "Replaced" if existed else "Created"
        return f"{verb} {rel} ({len(content):,} characters, {lines:,} lines)"

    @toolset_tool()
    async def edit_file(
        self, ctx: ToolContext, path: str, old: str, new: str, replace_all: bool = False
    ) -> str:
        """Replace exact text in a file.

        ``old`` must match exactly, whitespace included (copy it without read_file's line
        numbers), and occur once unless ``replace_all``.
        """
        fs = self.view(ctx)
        result = await _call(fs.edit(path, old, new, replace_all=replace_all))
        plural = "occurrence" if result.replacements == 1 else "occurrences"
        return f"Edited {result.path}: replaced {result.replacements} {plural}"

    @toolset_tool(read_only=True)
    async def grep_files(
        self, ctx: ToolContext, pattern: str, path: str = ".", glob: str | None = None
    ) -> str:
        """Search file contents with a Python regular expression; prints ``path:line: text``.

        At most 200 lines; binary files are skipped.

        Args:
            path: File or directory to search.
            glob: Only files matching this, e.g. ``*.py``.
        """
        fs = self.view(ctx)
        matches = await _call(fs.grep(pattern, path, glob=glob, limit=MAX_GREP_MATCHES + 1))
        if not matches:
            scope = f" (files matching {glob!r})" if glob else ""
            return f"No matches for {pattern!r} in {_where(fs, path)}{scope}"
        lines: list[str] = []
        used = 0
        for match in matches[:MAX_GREP_MATCHES]:
            row = f"{match.path}:{match.line_number}: {match.line}"
            if used + len(row) > MAX_GREP_CHARS:
                break
            lines.append(row)
            used += len(row) + 1
        if len(lines) < len(matches):
            lines.append(
                f"[showing the first {len(lines)} matches; there are more. "
                "Narrow the pattern, path or glob to see the rest.]"
            )
        return "\n".join(lines)

    @toolset_tool(read_only=True)
    async def glob_files(self, ctx: ToolContext, pattern: str, path: str = ".") -> str:
        """Find files by glob pattern; prints one path per line.

        ``**/*.py`` matches at any depth, ``{a,b}`` either.

        Args:
            path: Directory to search from.
        """
        fs = self.view(ctx)
        found = await _call(fs.glob(pattern, path, limit=MAX_GLOB_RESULTS + 1))
        if not found:
            return f"No files match {pattern!r} under {_where(fs, path)}"
        lines = [info.path for info in found[:MAX_GLOB_RESULTS]]
        if len(found) > MAX_GLOB_RESULTS:
            lines.append(
                f"[showing the first {MAX_GLOB_RESULTS} files; there are more. "
                "Use a narrower pattern or path.]"
            )
        return "\n".join(lines)

    @toolset_tool(read_only=True)
    async def list_files(self, ctx: ToolContext, path: str = ".") -> str:
        """List a directory: sub-directories end with ``/``, files show their size."""
        fs = self.view(ctx)
        entries = await _call(fs.ls(path))
        if not entries:
            return f"[{_where(fs, path)} is empty]"
        entries.sort(key=lambda e: (not e.is_dir, e.path))
        lines = [
            f"{e.path}/" if e.is_dir else f"{e.path} ({_human_size(e.size)})"
            for e in entries[:MAX_LIST_ENTRIES]
        ]
        if len(entries) > MAX_LIST_ENTRIES:
            lines.append(
                f"[showing {MAX_LIST_ENTRIES} of {len(entries):,} entries; "
                "use glob_files to find specific files]"
            )
        return "\n".join(lines)
