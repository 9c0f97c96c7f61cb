"""``Workspace``: a filesystem plus the layout everyone agrees on.

Layout (BEHAVIOUR.md §7), all paths relative to the workspace root::

    AGENTS.md                      instructions for every agent using the workspace
    MEMORY.md, memory/             curated memory and daily ledgers (isolation scope "global")
    knowledge/                     reference material
    skills/<name>/SKILL.md         skills
    subagents/<id>.md              sub-agent definitions
    plans/                         the project's plans (shared; plan mode writes the plan
                                   in the caller's own scope, see below)
    large_tool_results/<agent>/…   evicted tool results
    agents/<agent>/sessions/<user>/<session>.log.jsonl   session logs

Runtime data (memory, session logs, large tool results) is placed by the workspace's
:data:`IsolationScope`. With ``"user"`` (the default) one user's data is never in a directory
another user's data is in; ``"session"`` also separates each session; ``"agent"`` shares data
between the users of one agent; ``"global"`` shares everything:

* memory home (holds ``MEMORY.md``, the ``memory/`` ledgers and the ``plans/PLAN.md`` that
  plan mode writes): global ``""`` (the root, so ``plans/PLAN.md`` as before),
  agent ``agents/A``, user ``agents/A/users/U``, session ``agents/A/users/U/sessions/S``
* sessions: global ``sessions``, agent ``agents/A/sessions``, user ``agents/A/sessions/U``,
  session ``agents/A/sessions/U/S``
* large tool results: global ``large_tool_results``, agent ``large_tool_results/A``, user
  ``large_tool_results/A/U``, session ``large_tool_results/A/U/S``

The global memory home is exactly the classic layout. ``Workspace(root, data_dir=...)`` keeps
the runtime folders (``.harnessed``, ``agents``, ``large_tool_results``, and ``sessions`` in
the global scope) in another local directory: same paths for the harness, nothing of it in
``root`` (what a command line wants for a user's project). Ids used as path segments are encoded
(``/``, ``..`` and leading dots cannot address anything else), see
:func:`~harnessed.workspace.paths.encode_part`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import unquote, urlparse

from harnessed.workspace.base import BaseFilesystem
from harnessed.workspace.filesystem import Filesystem
from harnessed.workspace.fsspec_fs import FsspecFilesystem
from harnessed.workspace.local import LocalFilesystem
from harnessed.workspace.paths import encode_part, join, session_dir_parts
from harnessed.workspace.view import ViewFilesystem, ViewPolicy, runtime_link_check

__all__ = ["IsolationScope", "RuntimeKind", "Workspace"]

IsolationScope = Literal["user", "session", "agent", "global"]
"""How runtime data is separated: per user (default), per session, per agent, or not at all."""

RuntimeKind = Literal["memory", "plans", "sessions", "large_tool_results"]
"""The kinds of runtime data whose location depends on the isolation scope."""

_SCOPES: tuple[str, ...] = get_args(IsolationScope)
_KINDS: tuple[str, ...] = get_args(RuntimeKind)


class Workspace:
    """The agent's workspace: ``.fs`` for file access, helpers for where things live.

    ``root`` is a :class:`Filesystem`, a URL with ``://`` (``s3://bucket/prefix``,
    ``memory://name`` ... served by :class:`FsspecFilesystem` with ``storage_options``;
    ``file://`` URLs become a :class:`LocalFilesystem`), or a local directory (created when
    missing).
    """

    AGENTS_MD = "AGENTS.md"
    MEMORY_MD = "MEMORY.md"
    MEMORY_DIR = "memory"
    KNOWLEDGE_DIR = "knowledge"
    SKILLS_DIR = "skills"
    SUBAGENTS_DIR = "subagents"
    PLANS_DIR = "plans"
    PLAN_FILE = "plans/PLAN.md"
    """The plan of the global scope; other scopes: :meth:`plan_file`."""
    LARGE_TOOL_RESULTS_DIR = "large_tool_results"
    AGENTS_DIR = "agents"

    def __init__(
        self,
        root: str | os.PathLike[str] | Filesystem,
        *,
        scope: IsolationScope = "user",
        storage_options: dict[str, Any] | None = None,
        data_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if scope not in _SCOPES:
            raise ValueError(f"Workspace scope must be one of {', '.join(_SCOPES)}; got {scope!r}")
        self.scope: IsolationScope = scope
        fs = _make_filesystem(root, storage_options or {})
        if data_dir is not None:
            if not isinstance(fs, LocalFilesystem) or fs.data_root is not None:
                raise ValueError(
                    f"data_dir needs a workspace root that is a local directory, got {root!r}"
                )
            names = (*self.runtime_roots, self.LARGE_TOOL_RESULTS_DIR)
            fs = LocalFilesystem(
                fs.root,
                data_root=data_dir,
                data_names=names,
                metadata_inline=fs.metadata_inline,
            )
        if isinstance(fs, BaseFilesystem):  # a local one: no link into the runtime data
            fs = fs.with_link_check(runtime_link_check(self.runtime_roots))
        self.fs: Filesystem = fs
        """The workspace's files. On a local directory, symbolic links that lie in or lead
        into the runtime areas (:attr:`runtime_roots`) are not followed, by anyone."""
        self.local_root: Path | None = (
            self.fs.root if isinstance(self.fs, LocalFilesystem) else None
        )
        """The local directory of the workspace, or ``None`` for remote and memory backends."""
        self.data_root: Path | None = (
            (self.fs.data_root or self.fs.root) if isinstance(self.fs, LocalFilesystem) else None
        )
        """The local directory that holds the runtime data (``.harnessed/``, ``agents/``...):
        ``data_dir`` when given, else :attr:`local_root`; ``None`` for remote backends."""

    def __repr__(self) -> str:
        data = f", data_dir={str(self.data_root)!r}" if self.data_root != self.local_root else ""
        return f"Workspace({self.fs!r}, scope={self.scope!r}{data})"

    @property
    def runtime_roots(self) -> tuple[str, ...]:
        """The top-level folders of the harness's runtime data (state, session logs, every
        user's memory and tool results), hidden from the model apart from its own scope."""
        third = "sessions" if self.scope == "global" else self.LARGE_TOOL_RESULTS_DIR
        return (".harnessed", self.AGENTS_DIR, third)

    # ------------------------------------------------------------ fixed layout
    def skill_file(self, name: str) -> str:
        """``skills/<name>/SKILL.md``."""
        return join(self.SKILLS_DIR, encode_part(name, "skill name"), "SKILL.md")

    def subagent_file(self, subagent_id: str) -> str:
        """``subagents/<id>.md``."""
        return join(self.SUBAGENTS_DIR, encode_part(subagent_id, "sub-agent id") + ".md")

    def sessions_dir(self, agent_id: str, user_id: str) -> str:
        """``agents/<agent>/sessions/<user>``: where one user's session logs of an agent live."""
        return join(self.AGENTS_DIR, *session_dir_parts(agent_id, user_id))

    def session_log_path(self, agent_id: str, user_id: str, session_id: str) -> str:
        """``agents/<agent>/sessions/<user>/<session>.log.jsonl`` (BEHAVIOUR.md §5)."""
        name = encode_part(session_id, "session_id") + ".log.jsonl"
        return join(self.sessions_dir(agent_id, user_id), name)

    def view(
        self,
        agent_id: str,
        user_id: str,
        session_id: str,
        *,
        writable_instructions: bool | Sequence[str] = False,
    ) -> ViewFilesystem:
        """The model's view of the workspace for one caller (BEHAVIOUR.md §9): shared files and
        the caller's own scope; other users' data and the harness's runtime data are hidden,
        instruction files read-only unless ``writable_instructions``."""
        if not isinstance(self.fs, BaseFilesystem):
            raise TypeError(
                f"the model's view needs a filesystem built on BaseFilesystem; {self.fs!r} is not"
            )
        policy = ViewPolicy.for_caller(
            self, agent_id, user_id, session_id, writable_instructions=writable_instructions
        )
        return ViewFilesystem(self.fs, policy)

    # ------------------------------------------------------------ scoped runtime data
    def runtime_dir(
        self,
        kind: RuntimeKind,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
    ) -> str:
        """Directory of one kind of runtime data under this workspace's isolation scope.

        The ids the scope needs are required (``agent_id`` for every scope but global,
        ``user_id`` for user and session, ``session_id`` for session); others are ignored.
        For ``"memory"`` this is the ledger directory (``<memory home>/memory``), for
        ``"plans"`` the caller's plan directory (``<memory home>/plans``).
        """
        if kind not in _KINDS:
            raise ValueError(f"runtime kind must be one of {', '.join(_KINDS)}; got {kind!r}")
        scoped = self._scoped_ids(agent_id, user_id, session_id)
        if kind == "memory":
            return join(self._memory_home(scoped), self.MEMORY_DIR)
        if kind == "plans":
            return join(self._memory_home(scoped), self.PLANS_DIR)
        if kind == "large_tool_results":
            return join(self.LARGE_TOOL_RESULTS_DIR, *scoped)
        if not scoped:
            return "sessions"
        return join(self.AGENTS_DIR, scoped[0], "sessions", *scoped[1:])

    def memory_file(
        self,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
    ) -> str:
        """The curated ``MEMORY.md`` for the scope (``MEMORY.md`` at the root when global)."""
        scoped = self._scoped_ids(agent_id, user_id, session_id)
        return join(self._memory_home(scoped), self.MEMORY_MD)

    def plan_file(
        self,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
    ) -> str:
        """The plan plan mode writes for the caller: ``<memory home>/plans/PLAN.md``, in the
        caller's own scope (``plans/PLAN.md`` at the root only for the global scope)."""
        ids = {"agent_id": agent_id, "user_id": user_id, "session_id": session_id}
        return join(self.runtime_dir("plans", **ids), "PLAN.md")

    def large_tool_results_dir(
        self, agent_id: str, user_id: str | None = None, session_id: str | None = None
    ) -> str:
        """Where evicted tool results go (``large_tool_results/<agent>/…`` by scope)."""
        return self.runtime_dir(
            "large_tool_results", agent_id=agent_id, user_id=user_id, session_id=session_id
        )

    def _scoped_ids(
        self, agent_id: str | None, user_id: str | None, session_id: str | None
    ) -> tuple[str, ...]:
        """The encoded ids the scope separates by: (), (A,), (A, U) or (A, U, S)."""
        wanted = {"global": 0, "agent": 1, "user": 2, "session": 3}[self.scope]
        values = (("agent_id", agent_id), ("user_id", user_id), ("session_id", session_id))
        parts: list[str] = []
        for name, value in values[:wanted]:
            if value is None:
                raise ValueError(f"{name} is required for isolation scope {self.scope!r}")
            parts.append(encode_part(value, name))
        return tuple(parts)

    def _memory_home(self, scoped: tuple[str, ...]) -> str:
        if not scoped:
            return ""
        home = [self.AGENTS_DIR, scoped[0]]
        if len(scoped) > 1:
            home += ["users", scoped[1]]
        if len(scoped) > 2:
            home += ["sessions", scoped[2]]
        return join(*home)


def _make_filesystem(
    root: str | os.PathLike[str] | Filesystem, storage_options: dict[str, Any]
) -> Filesystem:
    if isinstance(root, Filesystem):
        if storage_options:
            raise ValueError("storage_options only apply when the workspace root is a URL")
        return root
    if isinstance(root, str) and "://" in root:
        parsed = urlparse(root)
        if parsed.scheme == "file":
            return LocalFilesystem(unquote(parsed.path))
        return FsspecFilesystem(root, **storage_options)
    if isinstance(root, str | os.PathLike):
        if storage_options:
            raise ValueError("storage_options only apply when the workspace root is a URL")
        return LocalFilesystem(root)
    raise TypeError(
        f"Workspace root must be a path, a URL or a Filesystem, got {type(root).__name__}"
    )
