"""The model's view of a workspace: shared files plus the caller's own scope (BEHAVIOUR.md §9).

A workspace holds the project's files *and* the harness's runtime data for every user: state
(``.harnessed/``), session logs and search indexes (``agents/…``), other users' memory and
evicted tool results. The model sees only part of it:

* **shared files**: ``AGENTS.md``, the root ``MEMORY.md`` and ``memory/``, ``knowledge/``,
  ``skills/``, ``subagents/``, ``plans/`` and every project file;
* **the caller's own scope**: its memory home (``MEMORY.md``, ``memory/`` and the ``plans/``
  plan mode writes to) and its
  ``large_tool_results`` directory, placed by the workspace's isolation scope.

Everything else under the runtime areas (``.harnessed/``, ``agents/``, ``large_tool_results/``
and, for the global scope, ``sessions/``) is not listed, readable or writable; asking for it
raises :class:`~harnessed.workspace.errors.PathNotInViewError`, whether it exists or not.
Instruction files (``AGENTS.md``, ``skills/``, ``subagents/``) are read-only unless the
application opts in (``writable_instructions=True``): a file the model writes never becomes a
system instruction by itself.

:class:`ViewFilesystem` applies the policy on top of any
:class:`~harnessed.workspace.base.BaseFilesystem`. On a local directory every symlink a walk
follows is checked too, against the whole path the walk goes on with (the link's target
followed by the rest of the path), at every link of a chain: no link lies in or leads into a
runtime area (not even the caller's own scope, where its commands can write links) or leads to
an instruction file. Listings and walks that start through a link show and enter only what
such a path may reach, so a link to the workspace root opens nothing the view hides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, ParamSpec, TypeVar

from harnessed.workspace.base import BaseFilesystem, LinkCheck
from harnessed.workspace.errors import PathNotInViewError, ReadOnlyPathError
from harnessed.workspace.filesystem import FileInfo

if TYPE_CHECKING:
    from harnessed.workspace.layout import Workspace

__all__ = ["INSTRUCTION_PATHS", "ViewFilesystem", "ViewPolicy", "runtime_link_check"]

INSTRUCTION_PATHS = ("AGENTS.md", "skills", "subagents", "tools.json")
"""Top-level entries the harness reads as instructions or configuration: read-only to the model
by default (``tools.json`` declares MCP servers, which run on the host)."""

P = ParamSpec("P")
T = TypeVar("T")

_HIDDEN_REASON = (
    "it belongs to another user or to the harness's runtime data (state, session logs, "
    "indexes), which the file tools and commands cannot reach"
)
_READ_ONLY_REASON = (
    "instruction files (AGENTS.md, skills/, subagents/) and tools.json are read-only; only "
    "the application can change them"
)


def _head_in(path: str, roots: Sequence[str]) -> bool:
    head = path.split("/", 1)[0].casefold()
    return any(head == root.casefold() for root in roots)


def runtime_link_check(hidden_roots: Sequence[str]) -> LinkCheck:
    """The rule every workspace keeps for links (its own code included): a symbolic link
    inside the runtime areas ``hidden_roots`` is never followed, and no link leads into them.

    The harness itself never puts a link there, and names runtime files by their real paths;
    a link there can only come from a command that wrote into its caller's own scope, and
    following it would let that caller's memory, plan or results be another user's files.
    """
    roots = tuple(hidden_roots)

    def check(link: str, reached: str) -> None:
        if _head_in(link, roots):
            raise PathNotInViewError(
                link,
                "it is a symbolic link inside the harness's runtime data (memory, plans, "
                "session logs, state, tool results), and links there are never followed",
            )
        if _head_in(reached, roots):
            raise PathNotInViewError(
                link,
                f"it is a symbolic link that leads into the harness's runtime data "
                f"({reached!r}), and links never lead there",
            )

    return check


def editable_instructions(writable: bool | Sequence[str]) -> tuple[str, ...]:
    """``True`` → every instruction path, ``False`` → none, or the names given (validated)."""
    if writable is True or writable is False:
        return tuple(n.casefold() for n in INSTRUCTION_PATHS) if writable else ()
    names = tuple(n.casefold() for n in writable)
    unknown = [n for n in names if n not in {p.casefold() for p in INSTRUCTION_PATHS}]
    if unknown:
        raise ValueError(
            f"writable_instructions names {unknown}; the instruction paths are "
            f"{', '.join(INSTRUCTION_PATHS)}"
        )
    return names


@dataclass(frozen=True, slots=True)
class ViewPolicy:
    """Which workspace paths one caller may see and change (see the module docstring)."""

    hidden_roots: tuple[str, ...]
    """Top-level names whose contents are hidden, apart from ``own``."""
    own: tuple[str, ...]
    """The caller's own paths inside the hidden areas (and everything below them)."""
    writable_instructions: tuple[str, ...] = ()
    """The entries of :data:`INSTRUCTION_PATHS` the caller may change (none by default)."""

    @classmethod
    def for_caller(
        cls,
        workspace: Workspace,
        agent_id: str,
        user_id: str,
        session_id: str,
        *,
        writable_instructions: bool | Sequence[str] = False,
    ) -> ViewPolicy:
        """The view of ``user_id`` in ``session_id`` of agent ``agent_id``."""
        ids = {"agent_id": agent_id, "user_id": user_id, "session_id": session_id}
        memory_file = workspace.memory_file(**ids)
        memory_dir = workspace.runtime_dir("memory", **ids)
        plans_dir = workspace.runtime_dir("plans", **ids)
        results = workspace.runtime_dir("large_tool_results", **ids)
        own = [p for p in (memory_file, memory_dir, plans_dir) if "/" in p]  # root: shared
        if workspace.scope != "global":
            own.append(results)
        return cls(
            workspace.runtime_roots, tuple(own), editable_instructions(writable_instructions)
        )

    # ------------------------------------------------------------ questions
    def _hidden_area(self, rel: str) -> bool:
        return _head_in(rel, self.hidden_roots)

    def _owned(self, rel: str) -> bool:
        return any(rel == p or rel.startswith(p + "/") for p in self.own)

    def _ancestor(self, rel: str) -> bool:
        return any(p.startswith(rel + "/") for p in self.own)

    def file_visible(self, rel: str) -> bool:
        """May the caller read the file (or enter the directory) ``rel``?"""
        return not rel or not self._hidden_area(rel) or self._owned(rel)

    def visible(self, rel: str) -> bool:
        """Is ``rel`` shown at all (also true for directories on the way to the caller's own)?"""
        return self.file_visible(rel) or self._ancestor(rel)

    def is_instruction(self, rel: str) -> bool:
        head = rel.split("/", 1)[0].casefold()
        return any(head == name.casefold() for name in INSTRUCTION_PATHS)

    def read_only(self, rel: str) -> bool:
        """Is ``rel`` an instruction file the caller may not change?"""
        head = rel.split("/", 1)[0].casefold()
        return self.is_instruction(rel) and head not in self.writable_instructions

    def check_read(self, rel: str) -> None:
        if not self.visible(rel):
            raise PathNotInViewError(rel, _HIDDEN_REASON)

    def check_write(self, rel: str) -> None:
        if not self.file_visible(rel):
            raise PathNotInViewError(rel, _HIDDEN_REASON)
        if self.read_only(rel):
            raise ReadOnlyPathError(rel, _READ_ONLY_REASON)

    def check_link(self, link: str, reached: str) -> None:
        """A symlink must not lie in or lead into a hidden area (the caller's own scope
        included: see :func:`runtime_link_check`), nor lead to an instruction file the caller
        may not change. ``reached`` is the whole path the walk goes on with."""
        runtime_link_check(self.hidden_roots)(link, reached)
        if self.read_only(reached):
            raise PathNotInViewError(
                link,
                f"it is a symbolic link to {reached!r}; links may not lead to instruction "
                "files (AGENTS.md, skills/, subagents/, tools.json), which are read-only",
            )


class ViewFilesystem(BaseFilesystem):
    """A :class:`BaseFilesystem` seen through a :class:`ViewPolicy`."""

    def __init__(self, inner: BaseFilesystem, policy: ViewPolicy) -> None:
        if not isinstance(inner, BaseFilesystem):
            raise TypeError(
                "a workspace view needs a filesystem built on BaseFilesystem (local, memory or "
                f"fsspec); got {type(inner).__name__}"
            )
        super().__init__()
        self._locks = inner._locks  # edits through any view of one workspace are serialized
        self.policy = policy
        self.inner: BaseFilesystem = inner.with_link_check(policy.check_link)
        self.count_lines_max_bytes = inner.count_lines_max_bytes
        self.metadata_inline = inner.metadata_inline

    def __repr__(self) -> str:
        return f"ViewFilesystem({self.inner!r}, own={list(self.policy.own)})"

    @property
    def appends_in_place(self) -> bool:
        return self.inner.appends_in_place

    def normalize(self, path: str) -> str:
        return self.inner.normalize(path)

    async def _run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.inner._run(fn, *args, **kwargs)

    # ------------------------------------------------------------ primitives
    def _info(self, rel: str) -> FileInfo | None:
        self.policy.check_read(rel)
        return self.inner._info(rel)

    def _list_dir(self, rel: str) -> list[FileInfo]:
        self.policy.check_read(rel)
        return [i for i in self.inner._list_dir(rel) if self.policy.visible(i.path)]

    def _walk(self, rel: str) -> Iterator[FileInfo]:
        self.policy.check_read(rel)
        return (i for i in self.inner._walk(rel) if self.policy.file_visible(i.path))

    def _read(self, rel: str) -> bytes:
        self.policy.check_read(rel)
        return self.inner._read(rel)

    def _open(self, rel: str) -> AbstractContextManager[BinaryIO]:
        self.policy.check_read(rel)
        return self.inner._open(rel)

    def _write(self, rel: str, data: bytes) -> None:
        self.policy.check_write(rel)
        self.inner._write(rel, data)

    def _append(self, rel: str, data: bytes) -> None:
        self.policy.check_write(rel)
        self.inner._append(rel, data)

    def _delete(self, rel: str, is_dir: bool) -> None:
        self.policy.check_write(rel)
        self.inner._delete(rel, is_dir)

    def _makedirs(self, rel: str) -> None:
        self.policy.check_write(rel)
        self.inner._makedirs(rel)

    def _check_writable(self, rel: str) -> None:
        self.policy.check_write(rel)
        super()._check_writable(rel)
