"""Installed skills are read-only to the model's file tools.

A skill's ``allowed-tools`` pre-approve tools for the session once it is loaded. If the model
could write a ``SKILL.md`` into a skill layer and then load it, a file edit (which
``accept_edits`` mode or an allow rule lets run without asking) would become any tool it
likes, ``execute`` included. So ``write_file`` and ``edit_file`` are refused inside the skill
layers of the workspace (``skills/``, the user's own skills folder, and any local
``skill_dirs`` folder that lies inside the workspace), also when the path reaches one through
a symbolic link, unless the application
opts in (``Skills(model_edits_skills=True)``). New skills come from the model only as drafts
(``propose_skill``), which the application promotes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harnessed.workspace import BaseFilesystem, Filesystem, WorkspaceError

__all__ = ["EDITING_TOOLS", "skill_write_refusal"]

EDITING_TOOLS = frozenset({"write_file", "edit_file"})
"""The built-in tools that write a file named by their ``path`` argument."""


def skill_write_refusal(
    tool: str, arguments: Mapping[str, Any], fs: Filesystem, roots: Iterable[str]
) -> str | None:
    """The refusal for a file tool call writing inside one of ``roots`` of ``fs``, or ``None``."""
    path = arguments.get("path")
    if tool not in EDITING_TOOLS or not isinstance(path, str):
        return None
    try:
        named = {fs.normalize(path).casefold()}
        if isinstance(fs, BaseFilesystem):  # and where its links really lead
            named.add(fs.real_path(path).casefold())
    except (WorkspaceError, OSError, ValueError):
        return None  # the tool itself reports a path it cannot use
    for root in roots:
        folded = root.strip("/").casefold()
        if not folded or any(rel == folded or rel.startswith(folded + "/") for rel in named):
            where = f"{folded}/" if folded else "the whole workspace is a skill folder"
            return (
                f"{tool} refused: {path!r} is inside the installed skills ({where}), which are "
                "read-only to you (a skill can pre-approve tools). To suggest a new skill, use "
                "propose_skill if it is available, or ask the user."
            )
    return None
