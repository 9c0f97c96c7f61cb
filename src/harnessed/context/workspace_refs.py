"""Workspace material: AGENTS.md (an instruction) and MEMORY.md, knowledge, context files
(references). Loaded once per call by the compiler.

All of it shares one budget, ``max_context_tokens`` (default 8,000), spent in this order:

1. ``AGENTS.md`` — it may take the whole budget;
2. the application's extra context files, in the order given;
3. the ``MEMORY.md`` files (the shared one, then the user's or session's), together at most
   what is left — at most half of it when there is knowledge to show, so knowledge always
   keeps room — split evenly, a file's unused share passing to the next;
4. the knowledge index and listing: everything still left.

A file longer than its share is cut at a line boundary and ends with a note saying so (and
where the rest is); a file for which too little is left is left out. Every cut and every
omission is reported (``workspace_budget_cut:<material-id>``,
``workspace_budget_omitted:<material-id>``) in the request's manifest.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from harnessed.capabilities.seam import PrepareInfo
from harnessed.context.materials import Material
from harnessed.tokens import TokenEstimator
from harnessed.workspace.errors import PathNotInViewError, PathOutsideWorkspaceError
from harnessed.workspace.layout import Workspace

logger = logging.getLogger(__name__)

_REFUSED = (PathNotInViewError, PathOutsideWorkspaceError)

__all__ = [
    "WorkspaceFiles",
    "WorkspaceRefs",
    "WorkspaceRefsLoader",
    "fit_to_tokens",
    "load_workspace_refs",
]

KNOWLEDGE_DIR = Workspace.KNOWLEDGE_DIR
KNOWLEDGE_INDEX = f"{KNOWLEDGE_DIR}/KNOWLEDGE.md"
_LISTED_FILES = 200
_MIN_KEPT = 16
"""A cut file keeps at least this many tokens besides its note, or is left out."""


class WorkspaceFiles(Protocol):
    """The little the loader needs from a workspace filesystem."""

    async def exists(self, path: str) -> bool: ...

    async def read_text(self, path: str) -> str: ...

    async def list_tree(self, path: str) -> list[str]: ...


class _Refusing:
    """``files`` where a path the workspace refuses to open (a symbolic link that leads out of
    it or into the harness's runtime data, e.g. a shared ``MEMORY.md`` a command linked to
    another user's) counts as absent, and is reported as ``workspace_refused:<path>``: one
    bad link in a shared file must not fail every user's calls."""

    def __init__(self, files: WorkspaceFiles, transforms: list[str]) -> None:
        self._files = files
        self._transforms = transforms

    def _refused(self, path: str, exc: Exception) -> None:
        note = f"workspace_refused:workspace/{path}"
        if note not in self._transforms:
            self._transforms.append(note)
            logger.warning("workspace material %r left out: %s", path, exc)

    async def exists(self, path: str) -> bool:
        try:
            return await self._files.exists(path)
        except _REFUSED as exc:
            self._refused(path, exc)
            return False

    async def read_text(self, path: str) -> str:
        try:
            return await self._files.read_text(path)
        except _REFUSED as exc:  # it became a link after exists() said yes
            self._refused(path, exc)
            return ""

    async def list_tree(self, path: str) -> list[str]:
        try:
            return await self._files.list_tree(path)
        except _REFUSED as exc:
            self._refused(path, exc)
            return []


@dataclass(frozen=True, slots=True)
class WorkspaceRefs:
    """What one call loaded from the workspace."""

    agents_md: str | None = None
    materials: Sequence[Material] = field(default_factory=tuple)
    transforms: tuple[str, ...] = ()
    """What the budget did: ``workspace_budget_cut:<id>`` / ``workspace_budget_omitted:<id>``."""

    @property
    def instruction_transforms(self) -> tuple[str, ...]:
        """The transforms about ``AGENTS.md``, the only workspace material summaries get."""
        agents_id = f"workspace/{Workspace.AGENTS_MD}"
        return tuple(t for t in self.transforms if t.partition(":")[2] == agents_id)


def fit_to_tokens(text: str, budget: int, estimator: TokenEstimator, note: str) -> str:
    """``text`` if it fits ``budget`` tokens, else its head cut to fit, followed by ``note``."""
    if estimator.count_text(text) <= budget:
        return text
    room = max(budget - estimator.count_text(note) - 4, 0)
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits
        mid = (low + high + 1) // 2
        if estimator.count_text(text[:mid]) <= room:
            low = mid
        else:
            high = mid - 1
    head = text[:low]
    cut = head.rfind("\n")
    if cut > low // 2:
        head = head[:cut]
    return f"{head.rstrip()}\n\n{note}"


class _Budget:
    """The workspace-material budget of one call, spent file by file."""

    def __init__(self, total: int, estimator: TokenEstimator) -> None:
        self.left = total
        self.estimator = estimator
        self.transforms: list[str] = []

    def take(self, material_id: str, text: str, share: int, note: str) -> str | None:
        """``text`` within ``share`` tokens (cut, with ``note``), or ``None`` when left out."""
        share = min(share, self.left)
        tokens = self.estimator.count_text(text)
        if tokens > share:
            if share < self.estimator.count_text(note) + _MIN_KEPT:
                self.transforms.append(f"workspace_budget_omitted:{material_id}")
                return None
            text = fit_to_tokens(text, share, self.estimator, note)
            tokens = self.estimator.count_text(text)
            self.transforms.append(f"workspace_budget_cut:{material_id}")
        self.left -= min(tokens, self.left)
        return text

    async def read(
        self, files: WorkspaceFiles, path: str, note: str, share: int | None = None
    ) -> str | None:
        """The workspace file ``path`` within ``share`` (default: all that is left)."""
        text = await files.read_text(path)
        return self.take(f"workspace/{path}", text, self.left if share is None else share, note)


async def load_workspace_refs(
    files: WorkspaceFiles,
    estimator: TokenEstimator,
    *,
    max_context_tokens: int = 8_000,
    memory_files: Sequence[str] = (Workspace.MEMORY_MD,),
    context_files: Sequence[str] = (),
    agents_files: Sequence[str] = (Workspace.AGENTS_MD,),
) -> WorkspaceRefs:
    """Read AGENTS.md, the extra context files, the MEMORY.md files and knowledge, within
    ``max_context_tokens`` together (see the module docstring for the order and split).

    ``memory_files`` are the shared ``MEMORY.md`` and the one of the isolation scope (a user's
    own memory). ``agents_files`` are where ``AGENTS.md`` may be, the first that exists wins
    (the caller's own ``<user>/AGENTS.md`` overrides the shared one).
    """
    budget = _Budget(max_context_tokens, estimator)
    files = _Refusing(files, budget.transforms)
    agents_md = await _read_agents_md(files, budget, agents_files)
    materials = await _read_context_files(files, budget, context_files)
    knowledge = await _knowledge(files)
    materials += await _read_memory_files(files, budget, memory_files, bool(knowledge))
    if knowledge:
        text = budget.take(
            "workspace/knowledge",
            knowledge,
            budget.left,
            "[The knowledge index was cut here to fit the workspace material budget. Read the "
            "files under knowledge/ with read_file for the rest.]",
        )
        if text is not None:
            materials.append(
                Material(
                    "workspace/knowledge",
                    "knowledge",
                    "workspace",
                    KNOWLEDGE_DIR,
                    "reference",
                    text,
                )
            )
    return WorkspaceRefs(agents_md, tuple(materials), tuple(budget.transforms))


async def _read_agents_md(
    files: WorkspaceFiles, budget: _Budget, agents_files: Sequence[str]
) -> str | None:
    """The first of ``agents_files`` that exists (else the shared AGENTS.md), if any."""
    agents_path = Workspace.AGENTS_MD
    for candidate in agents_files:
        if await files.exists(candidate):
            agents_path = candidate
            break
    if not await files.exists(agents_path):
        return None
    return await budget.read(
        files,
        agents_path,
        f"[{agents_path} is longer than the workspace material budget (max_context_tokens) "
        "and was cut here; the rest of it was not loaded.]",
    )


async def _read_context_files(
    files: WorkspaceFiles, budget: _Budget, context_files: Sequence[str]
) -> list[Material]:
    """The extra context files, in order, as required reference materials."""
    materials: list[Material] = []
    for path in context_files:
        text = await budget.read(
            files,
            path,
            f"[{path} is longer than what is left of the workspace material budget and was cut "
            "here; read the file itself for the rest.]",
        )
        if text is not None:
            materials.append(
                Material(
                    f"workspace/{path}",
                    "additional",
                    "workspace",
                    path,
                    "reference",
                    text,
                    required=True,
                )
            )
    return materials


async def _read_memory_files(
    files: WorkspaceFiles, budget: _Budget, memory_files: Sequence[str], has_knowledge: bool
) -> list[Material]:
    """The memory files that exist, sharing what is left of the budget (half of it when
    knowledge follows); a file's unused share goes to the next."""
    materials: list[Material] = []
    present = [p for p in memory_files if await files.exists(p)]
    memory_room = budget.left // 2 if has_knowledge else budget.left
    for i, path in enumerate(present):
        share = memory_room // (len(present) - i)
        used_before = budget.left
        text = await budget.read(
            files,
            path,
            f"[{path} is longer than its share of {share} tokens of the workspace material "
            "budget and was cut here. Use the memory_search tool to look up anything not "
            "shown.]",
            share,
        )
        memory_room -= used_before - budget.left
        if text is not None and text.strip():
            materials.append(
                Material(f"workspace/{path}", "memory", "workspace", path, "reference", text)
            )
    return materials


async def _knowledge(files: WorkspaceFiles) -> str:
    if not await files.exists(KNOWLEDGE_DIR):
        return ""
    parts: list[str] = []
    if await files.exists(KNOWLEDGE_INDEX):
        parts.append((await files.read_text(KNOWLEDGE_INDEX)).strip())
    others = sorted(p for p in await files.list_tree(KNOWLEDGE_DIR) if p != KNOWLEDGE_INDEX)
    if others:
        shown = others[:_LISTED_FILES]
        listing = "\n".join(f"- {p}" for p in shown)
        more = f"\n- … and {len(others) - len(shown)} more" if len(others) > len(shown) else ""
        parts.append(
            f"Other knowledge files (read them with read_file when relevant):\n{listing}{more}"
        )
    return "\n\n".join(p for p in parts if p)


class WorkspaceRefsLoader:
    """Loads an agent's workspace material for one call (the compiler's ``refs_loader``):
    ``AGENTS.md``, the shared and the caller's ``MEMORY.md``, knowledge and context files."""

    def __init__(
        self,
        workspace: Workspace,
        agent_name: str,
        estimator: TokenEstimator,
        *,
        max_context_tokens: int,
        context_files: Sequence[str] = (),
    ) -> None:
        self.workspace = workspace
        self.agent_name = agent_name
        self.estimator = estimator
        self.max_context_tokens = max_context_tokens
        self.context_files = tuple(context_files)

    async def __call__(self, info: PrepareInfo) -> WorkspaceRefs:
        ws = self.workspace
        scoped = ws.memory_file(
            agent_id=self.agent_name, user_id=info.runtime.user_id, session_id=info.runtime.session
        )
        home = posixpath.dirname(scoped)  # the caller's own folder ("" in the global scope)
        own_agents: tuple[str, ...] = (posixpath.join(home, ws.AGENTS_MD),) if home else ()
        root = ws.data_root  # the caller's own folder is runtime data
        if own_agents and root is not None and not (root / own_agents[0]).is_file():
            own_agents = ()  # one stat instead of a guarded walk for the usual case: none
        return await load_workspace_refs(
            ws.fs,
            self.estimator,
            agents_files=(*own_agents, ws.AGENTS_MD),
            memory_files=tuple(dict.fromkeys((ws.MEMORY_MD, scoped))),
            max_context_tokens=self.max_context_tokens,
            context_files=self.context_files,
        )
