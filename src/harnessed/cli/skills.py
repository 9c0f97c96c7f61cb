"""``harnessed skills list`` and ``harnessed skills validate PATH``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harnessed.runtime import RuntimeContext
from harnessed.skills import SKILL_FILE, SkillFormatError, Skills, validate_skill_dir
from harnessed.workspace import Workspace

__all__ = ["list_skills", "validate_skills"]


def list_skills(
    workspace: Path, skill_dirs: list[str], agent: str, user: str, console: Console
) -> int:
    """Print the skills an agent's user sees, and the folders skipped as invalid."""
    skills = Skills(skill_dirs)
    skills.bind(Workspace(workspace) if workspace.is_dir() else None, agent)
    ctx = RuntimeContext(user).resolved(agent)
    found = asyncio.run(skills.available(ctx))
    problems = asyncio.run(skills.problems(ctx))
    table = Table("skill", "layer", "description")
    for skill in found:
        table.add_row(skill.name, skill.layer.label, escape(skill.description))
    console.print(table if found else "no skills found")
    for problem in problems:
        console.print(f"[yellow]skipped[/] {escape(str(problem))}")
    return 0


def validate_skills(path: Path, console: Console) -> int:
    """Check one skill folder, or every skill folder inside ``path``; 1 when any is invalid."""
    folders = (
        [path]
        if (path / SKILL_FILE).exists() or not path.is_dir()
        else sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    )
    if not folders:
        console.print(f"[red]no skill folders in {escape(str(path))}[/]")
        return 1
    failed = 0
    for folder in folders:
        try:
            meta = validate_skill_dir(folder)
        except SkillFormatError as exc:
            failed += 1
            console.print(f"[red]invalid[/] {escape(str(folder))}")
            for problem in exc.problems:
                console.print(f"  - {escape(problem)}")
            continue
        console.print(f"[green]valid[/]   {escape(str(folder))} ({escape(meta.name)})")
    return 1 if failed else 0
