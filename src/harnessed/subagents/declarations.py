"""The sub-agents an agent may spawn: built-in, from ``subagents/*.md``, and from code.

Precedence when ids collide: declared in code, then workspace files, then the built-in
``general-purpose``. Workspace files are read once, on first use; a file that cannot be used is
skipped with a warning that names the file and the problem (see :attr:`Declarations.problems`).
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from harnessed.subagents.delegate import is_agent
from harnessed.subagents.spec import GENERAL_PURPOSE, SpecError, SubagentSpec, parse_spec_file
from harnessed.workspace.layout import Workspace
from harnessed.workspace.paths import join

if TYPE_CHECKING:
    from harnessed.capabilities.base import CallContext
    from harnessed.subagents.delegate import Delegate

__all__ = ["Declaration", "Declarations"]

logger = logging.getLogger(__name__)

Declaration = SubagentSpec
"""A declared sub-agent (a spec; ``spec.agent`` is set for a ``HarnessAgent`` declared as is)."""


def agent_spec(agent: Delegate) -> SubagentSpec:
    """A declaration for an existing agent: its name is the id, its prompt the description."""
    first = agent.sys_prompt.strip().splitlines()[0] if agent.sys_prompt.strip() else ""
    description = first[:300] or f"The agent {agent.name!r}."
    spec_id = agent.name.lower().replace(".", "-")
    return SubagentSpec(spec_id, description, agent=agent, source="agent")


def caller_ids(call: CallContext) -> tuple[str, str, str]:
    """``(agent, user, session)`` of a call: whose own sub-agent files apply."""
    return (call.agent_name, call.runtime.user_id, call.runtime.session)


_KEPT_FOLDERS = 1_024
"""How many callers' ``<user>/subagents`` paths are remembered."""


class Declarations:
    """What may be spawned, by id."""

    def __init__(
        self,
        declared: Sequence[SubagentSpec | Delegate],
        *,
        general_purpose: bool,
        workspace: Workspace | None,
        load_files: bool,
    ) -> None:
        self._code: dict[str, SubagentSpec] = {}
        for item in declared:
            if is_agent(item):
                spec = agent_spec(cast("Delegate", item))
            elif isinstance(item, SubagentSpec):
                spec = item
            else:
                raise TypeError(
                    f"sub-agents must be SubagentSpec or HarnessAgent objects, got {item!r}"
                )
            if spec.id in self._code:
                raise ValueError(f"two sub-agents are declared with the id {spec.id!r}")
            self._code[spec.id] = spec
        self._general = general_purpose
        self._workspace = workspace if load_files else None
        self._files: dict[str, SubagentSpec] | None = None
        self._user_files: dict[str, dict[str, SubagentSpec]] = {}
        """A user's own ``<user>/subagents/*.md`` by folder, read on the user's first use."""
        self._loading: asyncio.Lock | None = None
        self._folders: dict[tuple[str, ...], str | None] = {}
        self.problems: list[str] = []
        """Why workspace files were skipped (one message per file)."""

    def _user_folder(self, ids: Sequence[str]) -> str | None:
        """``<user>/subagents`` of a caller (agent, user, session), ``None`` without one."""
        ws = self._workspace
        if ws is None or len(ids) != 3:
            return None
        key = tuple(ids)
        if key in self._folders:  # asked at every request: the path is worked out once
            return self._folders[key]
        home = posixpath.dirname(ws.memory_file(agent_id=ids[0], user_id=ids[1], session_id=ids[2]))
        folder = posixpath.join(home, Workspace.SUBAGENTS_DIR) if home else None
        if len(self._folders) >= _KEPT_FOLDERS:
            self._folders.clear()
        self._folders[key] = folder
        return folder

    async def all(self, *caller: str) -> dict[str, SubagentSpec]:
        """Every declaration by id (workspace files read on first use). With the caller's
        ``(agent, user, session)``, the user's own ``<user>/subagents/*.md`` override the
        shared ones of the same id."""
        files = await self._load()
        folder = self._user_folder(caller)
        if folder is not None and folder not in self._user_files and self._workspace:
            own = await self._read(self._workspace, folder, shared=False)
            self._user_files[folder] = own
        return self._merge(files, folder)

    def _merge(
        self, files: Mapping[str, SubagentSpec], folder: str | None
    ) -> dict[str, SubagentSpec]:
        found: dict[str, SubagentSpec] = {}
        if self._general:
            found[GENERAL_PURPOSE.id] = GENERAL_PURPOSE
        found.update(files)
        if folder is not None:
            found.update(self._user_files.get(folder, {}))
        found.update(self._code)
        return found

    def loaded(self, *caller: str) -> dict[str, SubagentSpec] | None:
        """The declarations if the files were read already (for synchronous callers)."""
        if self._files is None and self._workspace is not None:
            return None
        folder = self._user_folder(caller)
        if folder is not None and folder not in self._user_files:
            return None
        return self._merge(self._files or {}, folder)

    async def reload(self) -> None:
        """Read the workspace's ``subagents/*.md`` again (e.g. after the application changed
        them)."""
        self._files = None
        self._user_files.clear()
        await self._load()

    async def _load(self) -> dict[str, SubagentSpec]:
        if self._files is not None or self._workspace is None:
            return self._files or {}
        if self._loading is None:
            self._loading = asyncio.Lock()
        async with self._loading:
            if self._files is None:
                self._files = await self._read(self._workspace)
        return self._files

    async def _read(
        self, workspace: Workspace, folder: str = Workspace.SUBAGENTS_DIR, *, shared: bool = True
    ) -> dict[str, SubagentSpec]:
        fs = workspace.fs
        found: dict[str, SubagentSpec] = {}
        problems: list[str] = []
        if not await fs.exists(folder):
            if shared:
                self.problems = problems
            return found
        for info in sorted(await fs.ls(folder), key=lambda i: i.path):
            name = info.path.rsplit("/", 1)[-1]
            if info.is_dir or not name.endswith(".md"):
                continue
            path = join(folder, name)
            spec_id = name[: -len(".md")]
            try:
                text = await fs.read_text(path)
                found[spec_id] = parse_spec_file(spec_id, text, source=path)
            except SpecError as exc:
                problems.append(str(exc))
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                problems.append(f"{path}: cannot be read ({type(exc).__name__}: {exc})")
        for problem in problems:
            logger.warning("sub-agent declaration skipped: %s", problem)
        if shared:
            self.problems = problems
        return found
