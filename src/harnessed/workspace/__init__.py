"""Workspace: the agent's files, on local disk, in memory or on any fsspec URL (S3 ...).

``Workspace`` pairs a :class:`Filesystem` with the shared layout (AGENTS.md, MEMORY.md,
memory/, knowledge/, skills/, subagents/, plans/, large_tool_results/, agents/…) and places
runtime data by :data:`IsolationScope`. Every backend follows one path policy: paths are
workspace-relative, and ``..`` escapes, outside absolute paths and escaping symlinks are refused.
"""

from harnessed.workspace.appendlog import AppendLog
from harnessed.workspace.base import BaseFilesystem
from harnessed.workspace.errors import (
    EditError,
    FileNotFoundInWorkspaceError,
    IsADirectoryInWorkspaceError,
    NotADirectoryInWorkspaceError,
    PathNotInViewError,
    PathOutsideWorkspaceError,
    ReadOnlyPathError,
    WorkspaceError,
)
from harnessed.workspace.filesystem import (
    DEFAULT_PAGE_CHARS,
    DEFAULT_PAGE_LINES,
    EditResult,
    FileInfo,
    Filesystem,
    GrepMatch,
    LinePage,
)
from harnessed.workspace.fsspec_fs import FsspecFilesystem
from harnessed.workspace.layout import IsolationScope, RuntimeKind, Workspace
from harnessed.workspace.local import LocalFilesystem
from harnessed.workspace.memory import MemoryFilesystem
from harnessed.workspace.paths import encode_part, normalize_path
from harnessed.workspace.view import INSTRUCTION_PATHS, ViewFilesystem, ViewPolicy

__all__ = [
    "DEFAULT_PAGE_CHARS",
    "DEFAULT_PAGE_LINES",
    "INSTRUCTION_PATHS",
    "AppendLog",
    "BaseFilesystem",
    "EditError",
    "EditResult",
    "FileInfo",
    "FileNotFoundInWorkspaceError",
    "Filesystem",
    "FsspecFilesystem",
    "GrepMatch",
    "IsADirectoryInWorkspaceError",
    "IsolationScope",
    "LinePage",
    "LocalFilesystem",
    "MemoryFilesystem",
    "NotADirectoryInWorkspaceError",
    "PathNotInViewError",
    "PathOutsideWorkspaceError",
    "ReadOnlyPathError",
    "RuntimeKind",
    "ViewFilesystem",
    "ViewPolicy",
    "Workspace",
    "WorkspaceError",
    "encode_part",
    "normalize_path",
]
