"""Checking one skill folder on local disk (``harnessed skills validate PATH``)."""

from __future__ import annotations

import os
from pathlib import Path

from harnessed.skills.spec import SKILL_FILE, SkillFormatError, SkillMeta, parse_skill_md

__all__ = ["validate_skill_dir"]


def validate_skill_dir(path: str | os.PathLike[str]) -> SkillMeta:
    """The front matter of the skill folder ``path``; :class:`SkillFormatError` lists every
    rule it breaks."""
    folder = Path(path)
    where = str(folder)
    if not folder.exists():
        raise SkillFormatError(where, ["the folder does not exist"])
    if not folder.is_dir():
        raise SkillFormatError(where, ["not a folder (give the skill's folder, not a file)"])
    skill_md = folder / SKILL_FILE
    if not skill_md.is_file():
        raise SkillFormatError(where, [f"the folder has no {SKILL_FILE}"])
    try:
        text = skill_md.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillFormatError(where, [f"cannot read {SKILL_FILE}: {exc}"]) from None
    return parse_skill_md(text, folder.resolve().name, where=str(skill_md))[0]
