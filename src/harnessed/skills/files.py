"""Reading a file of a skill, confined to the skill's folder."""

from __future__ import annotations

import os
import posixpath

from harnessed.skills.catalog import Skill
from harnessed.skills.spec import SKILL_FILE
from harnessed.workspace import PathOutsideWorkspaceError, WorkspaceError, normalize_path
from harnessed.workspace.paths import join

__all__ = ["MAX_FILE_CHARS", "SkillFileError", "is_skill_file", "read_skill_file", "skill_files"]

MAX_FILE_CHARS = 100_000
_LISTED = 100


class SkillFileError(ValueError):
    """A path that is not a readable file inside the skill's folder."""


def _inside(skill: Skill, path: str) -> str:
    """``path`` (relative to the skill folder) as a path of the layer's filesystem."""
    try:
        rel = normalize_path(path)
    except PathOutsideWorkspaceError as exc:
        raise SkillFileError(
            f"{path!r} is not a path inside skill {skill.name!r}: {exc.args[0]}"
        ) from None
    if not rel:
        raise SkillFileError(f"give a file inside skill {skill.name!r}, not its folder")
    local = skill.layer.local_dir(skill.name)
    if local is not None:  # a symlink inside the skill must not lead out of it
        target = os.path.realpath(local.joinpath(*rel.split("/")))
        home = os.path.realpath(local)
        if target != home and not target.startswith(home + os.sep):
            raise SkillFileError(f"{path!r} leads outside skill {skill.name!r}")
    return join(skill.folder, rel)


def is_skill_file(skill: Skill, path: str) -> bool:
    """Whether ``path`` names the skill's own file (``SKILL.md``, or its ``skill.md``)."""
    return posixpath.normpath(path.strip()) in (SKILL_FILE, skill.file)


async def read_skill_file(skill: Skill, path: str) -> str:
    """The text of ``path`` inside the skill (``SKILL.md`` gives the body only)."""
    if is_skill_file(skill, path):
        return skill.body
    full = _inside(skill, path)
    try:
        data = await skill.layer.fs.read(full)
    except (WorkspaceError, OSError) as exc:
        raise SkillFileError(f"cannot read {path!r} of skill {skill.name!r}: {exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return (
            f"[{path} is a binary file of {len(data):,} bytes; use it from a script of the "
            "skill instead of reading it]"
        )
    if len(text) > MAX_FILE_CHARS:
        return (
            text[:MAX_FILE_CHARS]
            + f"\n[... {len(text) - MAX_FILE_CHARS:,} more characters not shown: the file is "
            "longer than one read allows]"
        )
    return text


async def skill_files(skill: Skill) -> list[str]:
    """The files of the skill besides ``SKILL.md`` (paths relative to its folder, capped)."""
    try:
        found = await skill.layer.fs.list_tree(skill.folder)
    except (WorkspaceError, OSError):
        return []
    prefix = skill.folder + "/"
    rels = sorted(p[len(prefix) :] for p in found if p.startswith(prefix))
    return [r for r in rels if r != skill.file][:_LISTED]
