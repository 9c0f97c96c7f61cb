"""The sub-agents an agent may spawn: built-in, from ``subagents/*.md``, and from code.

Precedence when ids collide: declared in code, then workspace files, then the built-in
``general-purpose``. Workspace files are read once, on first use; a file that cannot be used is
skipped with a warning that names the file and the problem (see :attr:`Declarations.problems`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from harnessed.subagents.delegate import is_agent
from harnessed.subagents.spec import GENERAL_PURPOSE, SpecError, SubagentSpec, parse_spec_file
from harnessed.workspace.layout import Workspace
from harnessed.workspace.paths import join

if TYPE_CHECKING:
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
        self._loading: asyncio.Lock | None = None
        self.problems: list[str] = []
        """Why workspace files were skipped (one message per file)."""

    async def all(self) -> dict[str, SubagentSpec]:
        """Every declaration by id (workspace files read on first use)."""
        files = await self._load()
        found: dict[str, SubagentSpec] = {}
        if self._general:
            found[GENERAL_PURPOSE.id] = GENERAL_PURPOSE
        found.update(files)
        found.update(self._code)
        return found

    def loaded(self) -> dict[str, SubagentSpec] | None:
        """The declarations if the files were read already (for synchronous callers)."""
        if self._files is None and self._workspace is not None:
            return None
        found: dict[str, SubagentSpec] = {}
        if self._general:
            found[GENERAL_PURPOSE.id] = GENERAL_PURPOSE
        found.update(self._files or {})
        found.update(self._code)
        return found

    async def reload(self) -> None:
        """Read the workspace's ``subagents/*.md`` again (e.g. after the application changed
        them)."""
        self._files = None
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

    async def _read(self, workspace: Workspace) -> dict[str, SubagentSpec]:
        fs = workspace.fs
        found: dict[str, SubagentSpec] = {}
        problems: list[str] = []
        if not await fs.exists(Workspace.SUBAGENTS_DIR):
            self.problems = problems
            return found
        for info in sorted(await fs.ls(Workspace.SUBAGENTS_DIR), key=lambda i: i.path):
            name = info.path.rsplit("/", 1)[-1]
            if info.is_dir or not name.endswith(".md"):
                continue
            path = join(Workspace.SUBAGENTS_DIR, name)
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
        self.problems = problems
        return found
