"""Workspace material: AGENTS.md (an instruction) and MEMORY.md, knowledge, context files
(references). Loaded once per call by the compiler."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from harnessed.context.materials import Material
from harnessed.tokens import TokenEstimator
from harnessed.workspace.layout import Workspace

__all__ = ["WorkspaceFiles", "WorkspaceRefs", "fit_to_tokens", "load_workspace_refs"]

KNOWLEDGE_DIR = Workspace.KNOWLEDGE_DIR
KNOWLEDGE_INDEX = f"{KNOWLEDGE_DIR}/KNOWLEDGE.md"
_LISTED_FILES = 200


class WorkspaceFiles(Protocol):
    """The little the loader needs from a workspace filesystem."""

    async def exists(self, path: str) -> bool: ...

    async def read_text(self, path: str) -> str: ...

    async def list_tree(self, path: str) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class WorkspaceRefs:
    """What one call loaded from the workspace."""

    agents_md: str | None = None
    materials: Sequence[Material] = field(default_factory=tuple)


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


async def load_workspace_refs(
    files: WorkspaceFiles,
    estimator: TokenEstimator,
    *,
    max_context_tokens: int = 8_000,
    memory_files: Sequence[str] = (Workspace.MEMORY_MD,),
    context_files: Sequence[str] = (),
) -> WorkspaceRefs:
    """Read AGENTS.md, the MEMORY.md files, knowledge and the extra context files.

    ``memory_files`` are the shared ``MEMORY.md`` and the one of the isolation scope (a user's
    own memory); they share the ``max_context_tokens`` budget.
    """
    agents_path = Workspace.AGENTS_MD
    agents_md = await files.read_text(agents_path) if await files.exists(agents_path) else None
    materials: list[Material] = []
    present = [p for p in memory_files if await files.exists(p)]
    for path in present:
        budget = max_context_tokens // len(present)
        text = fit_to_tokens(
            await files.read_text(path),
            budget,
            estimator,
            f"[{path} is longer than its budget of {budget} tokens and was cut here. Use the "
            "memory_search tool to look up anything not shown.]",
        )
        if text.strip():
            materials.append(
                Material(f"workspace/{path}", "memory", "workspace", path, "reference", text)
            )
    knowledge = await _knowledge(files)
    if knowledge:
        text = fit_to_tokens(
            knowledge,
            max_context_tokens,
            estimator,
            f"[The knowledge index was cut to {max_context_tokens} tokens. Read the files under "
            "knowledge/ with read_file for the rest.]",
        )
        materials.append(
            Material(
                "workspace/knowledge", "knowledge", "workspace", KNOWLEDGE_DIR, "reference", text
            )
        )
    for path in context_files:
        materials.append(
            Material(
                f"workspace/{path}",
                "additional",
                "workspace",
                path,
                "reference",
                await files.read_text(path),
                required=True,
            )
        )
    return WorkspaceRefs(agents_md, tuple(materials))


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
