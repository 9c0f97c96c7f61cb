"""``harnessed skills list`` and ``harnessed skills validate PATH``."""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harnessed.runtime import RuntimeContext
from harnessed.skills import SKILL_FILE_NAMES, SkillFormatError, Skills, validate_skill_dir
from harnessed.workspace import Workspace

__all__ = ["list_skills", "register", "validate_skills"]


def register(sub: Any) -> None:
    skills = sub.add_parser("skills", help="list the skills an agent sees, or validate skills")
    skills_sub = skills.add_subparsers(dest="skills_command", required=True)
    listing = skills_sub.add_parser("list", help="the skills of a workspace and skill folders")
    listing.add_argument("--workspace", default=".", help="the agent's workspace (default: .)")
    listing.add_argument(
        "--skill-dir", action="append", default=[], help="an application skill folder or URL"
    )
    listing.add_argument("--agent", default="harnessed", help="agent name (default: harnessed)")
    listing.add_argument("--user", default="default", help="user id (default: default)")
    check = skills_sub.add_parser("validate", help="check skill folders against the format")
    check.add_argument("path", help="a skill folder, or a folder of skill folders")
    skills.set_defaults(handler=skills_command)


def skills_command(args: argparse.Namespace, console: Console) -> int:
    if args.skills_command == "validate":
        return validate_skills(Path(args.path), console)
    return list_skills(Path(args.workspace), args.skill_dir, args.agent, args.user, console)


def list_skills(
    workspace: Path, skill_dirs: list[str], agent: str, user: str, console: Console
) -> int:
    """Print the skills an agent's user sees, and the folders skipped as invalid."""
    skills = Skills(skill_dirs)
    skills.bind(Workspace(workspace) if workspace.is_dir() else None, agent)
    ctx = RuntimeContext(user).resolved(agent)
    catalog_log = logging.getLogger("harnessed.skills.catalog")
    level = catalog_log.level
    catalog_log.setLevel(logging.ERROR)  # skipped folders are listed below, not warned twice
    try:
        found = asyncio.run(skills.available(ctx))
        problems = asyncio.run(skills.problems(ctx))
    finally:
        catalog_log.setLevel(level)
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
        if any((path / n).exists() for n in SKILL_FILE_NAMES) or not path.is_dir()
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
        for note in meta.notes:
            console.print(f"  [yellow]note[/] {escape(note)}")
    return 1 if failed else 0
