"""Checking one skill folder on local disk (``harnessed skills validate PATH``)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from harnessed.skills.spec import (
    SKILL_FILE,
    SKILL_FILE_NAMES,
    SkillFormatError,
    SkillMeta,
    parse_skill_md,
)

__all__ = ["find_skill_file", "lower_case_note", "validate_skill_dir"]


def find_skill_file(folder: Path) -> Path | None:
    """The skill file of ``folder``: ``SKILL.md``, else the ``skill.md`` the reference also
    accepts; ``None`` when there is neither."""
    for name in SKILL_FILE_NAMES:
        if (folder / name).is_file():
            return folder / name
    return None


def lower_case_note(meta: SkillMeta, file_name: str) -> SkillMeta:
    """``meta`` with a note when its file is not named ``SKILL.md``."""
    if file_name == SKILL_FILE:
        return meta
    note = f"the file is named {file_name}; the standard names it {SKILL_FILE}"
    return dataclasses.replace(meta, notes=(note, *meta.notes))


def validate_skill_dir(path: str | os.PathLike[str]) -> SkillMeta:
    """The front matter of the skill folder ``path``; :class:`SkillFormatError` lists every
    rule it breaks, soft limits included (a skill that breaks only those still loads, with a
    warning). Accepted departures from the standard are in ``notes``."""
    folder = Path(path)
    where = str(folder)
    if not folder.exists():
        raise SkillFormatError(where, ["the folder does not exist"])
    if not folder.is_dir():
        raise SkillFormatError(where, ["not a folder (give the skill's folder, not a file)"])
    skill_md = find_skill_file(folder)
    if skill_md is None:
        raise SkillFormatError(where, [f"the folder has no {SKILL_FILE}"])
    try:
        text = skill_md.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillFormatError(where, [f"cannot read {skill_md.name}: {exc}"]) from None
    meta = parse_skill_md(text, folder.resolve().name, where=str(skill_md), strict=True)[0]
    return lower_case_note(meta, skill_md.name)
