"""Errors raised by workspace filesystems.

Every message names the workspace-relative path and says what was wrong, because these
messages reach the model through the file tools and should let it correct its next call.
Each error also derives from the matching built-in exception (``FileNotFoundError``,
``IsADirectoryError`` ...) so callers that only know the standard library still catch them.
"""

from __future__ import annotations

__all__ = [
    "EditError",
    "FileNotFoundInWorkspaceError",
    "IsADirectoryInWorkspaceError",
    "NotADirectoryInWorkspaceError",
    "PathNotInViewError",
    "PathOutsideWorkspaceError",
    "ReadOnlyPathError",
    "WorkspaceError",
]


class WorkspaceError(Exception):
    """Base class of every workspace error."""


class PathOutsideWorkspaceError(WorkspaceError, PermissionError):
    """The path is absolute, climbs out with ``..``, or resolves (through a symlink) outside."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"path {path!r} is not allowed: {reason}")


class FileNotFoundInWorkspaceError(WorkspaceError, FileNotFoundError):
    """Nothing exists at the path."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"no such file or directory in the workspace: {path or '.'!r}")


class IsADirectoryInWorkspaceError(WorkspaceError, IsADirectoryError):
    """A file operation was asked of a directory."""

    def __init__(self, path: str, action: str = "read") -> None:
        self.path = path
        super().__init__(f"cannot {action} {path or '.'!r}: it is a directory")


class NotADirectoryInWorkspaceError(WorkspaceError, NotADirectoryError):
    """A directory operation was asked of a file (or a path runs through a file)."""

    def __init__(
        self, path: str, action: str = "list", reason: str = "it is a file, not a directory"
    ) -> None:
        self.path = path
        super().__init__(f"cannot {action} {path!r}: {reason}")


class EditError(WorkspaceError, ValueError):
    """An edit could not be applied: the old text is missing, ambiguous, or the edit is empty."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"cannot edit {path!r}: {message}")


class PathNotInViewError(WorkspaceError, PermissionError):
    """The path exists in the workspace but is not part of the caller's view of it: another
    user's data, or the harness's own runtime data (state, session logs, indexes ...)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"path {path or '.'!r} is not reachable: {reason}")


class ReadOnlyPathError(WorkspaceError, PermissionError):
    """The path may be read but not changed (instruction files, unless the application opts
    in)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot change {path!r}: {reason}")
