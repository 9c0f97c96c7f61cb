"""Skill folders on local disk, for ``execute`` and for a sandbox to mount read-only.

Skills of local layers are used where they are. A skill of a remote layer (an fsspec URL) is
copied to a local folder named after a fingerprint of its files, so a changed file gives a new
copy; the copy is staged and renamed into place, so a half-made copy is never used.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harnessed.skills.catalog import Skill
from harnessed.workspace import FileInfo

__all__ = ["SANDBOX_SKILLS_ROOT", "SkillMount", "host_dir"]

SANDBOX_SKILLS_ROOT = "/skills"
"""Where a sandbox mounts skill folders unless ``Skills(sandbox_root=...)`` says otherwise."""


@dataclass(frozen=True, slots=True)
class SkillMount:
    """A skill folder a sandbox binds read-only: ``source`` on the host at ``target``."""

    name: str
    source: Path
    target: str


async def host_dir(skill: Skill, copies: Path) -> Path | None:
    """The skill's folder on local disk (a copy under ``copies`` for remote layers), or
    ``None`` when its files cannot be listed."""
    local = skill.layer.local_dir(skill.name)
    if local is not None:
        return local
    try:
        files = await skill.layer.fs.glob("**", skill.folder)
    except (OSError, ValueError):
        return None
    digest = hashlib.sha256(skill.layer.label.encode())
    for info in files:
        digest.update(f"{info.path}\0{info.size}\0{info.modified}\n".encode())
    target = copies / digest.hexdigest()[:16] / skill.name
    if not target.exists():
        await _copy_tree(skill, files, target)
    return target


async def _copy_tree(skill: Skill, files: Sequence[FileInfo], target: Path) -> None:
    """Copy the files of a remote skill to ``target``, all or nothing (another call may be
    copying the same skill at the same time: the first complete copy wins)."""
    staging = Path(tempfile.mkdtemp(prefix=f".{skill.name}-", dir=_parent(target)))
    try:
        # readable like a local skill folder: a root agent's sandbox reads it as another user
        staging.chmod(0o755)
        prefix = skill.folder + "/"
        for info in files:
            dest = staging.joinpath(*info.path[len(prefix) :].split("/"))
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(await skill.layer.fs.read(info.path))
        try:
            os.rename(staging, target)
        except OSError:
            if not target.exists():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _parent(target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    return target.parent
