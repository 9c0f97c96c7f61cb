"""``harnessed skills list``, ``harnessed skills validate PATH`` and the drafts the model
proposed: ``harnessed skills drafts``, ``promote NAME`` and ``reject NAME`` (each names who
proposed the draft; ``--user`` says whose when several users proposed one name)."""

from __future__ import annotations

import argparse
import asyncio
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harnessed.cli.config import DATA_DIR_HELP, WORKSPACE_HELP, ConfigError, data_location
from harnessed.runtime import RuntimeContext
from harnessed.skills import (
    SKILL_FILE_NAMES,
    SkillFormatError,
    SkillMeta,
    Skills,
    parse_skill_md,
    validate_skill_dir,
)
from harnessed.skills.drafts import AmbiguousDraftError
from harnessed.workspace import Workspace
from harnessed.workspace.errors import WorkspaceError

__all__ = ["list_drafts", "list_skills", "register", "review_draft", "validate_skills"]


def register(sub: Any) -> None:
    skills = sub.add_parser("skills", help="list the skills an agent sees, or validate skills")
    skills_sub = skills.add_subparsers(dest="skills_command", required=True)
    listing = skills_sub.add_parser("list", help="the skills of a workspace and skill folders")
    listing.add_argument("--workspace", default=None, help=WORKSPACE_HELP)
    listing.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    listing.add_argument(
        "--skill-dir", action="append", default=[], help="an application skill folder or URL"
    )
    listing.add_argument("--agent", default="harnessed", help="agent name (default: harnessed)")
    listing.add_argument("--user", default="default", help="user id (default: default)")
    check = skills_sub.add_parser("validate", help="check skill folders against the format")
    check.add_argument("path", help="a skill folder, or a folder of skill folders")
    drafts = skills_sub.add_parser("drafts", help="the drafts the model proposed, and by whom")
    _workspace_args(drafts)
    for verb, text in (("promote", "install a draft as a skill"), ("reject", "delete a draft")):
        review = skills_sub.add_parser(verb, help=text)
        review.add_argument("name", help="the draft's skill name")
        review.add_argument(
            "--user", default=None, help="whose draft (when several users have one)"
        )
        _workspace_args(review)
        if verb == "promote":
            review.add_argument(
                "--replace", action="store_true", help="replace an installed skill of that name"
            )
    skills.set_defaults(handler=skills_command)


def _workspace_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", default=None, help=WORKSPACE_HELP)
    parser.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    parser.add_argument("--agent", default="harnessed", help="agent name (default: harnessed)")


def skills_command(args: argparse.Namespace, console: Console) -> int:
    if args.skills_command == "validate":
        return validate_skills(Path(args.path), console)
    root = Path(args.workspace or ".")
    try:
        data = data_location(args.workspace, args.data_dir)
    except ConfigError as exc:
        console.print(str(exc), style="red", markup=False)
        return 2
    if args.skills_command == "drafts":
        return list_drafts(root, args.agent, console, data)
    if args.skills_command in ("promote", "reject"):
        return review_draft(
            root,
            args.agent,
            args.name,
            console,
            user=args.user,
            promote=args.skills_command == "promote",
            replace=getattr(args, "replace", False),
            data=data,
        )
    return list_skills(root, args.skill_dir, args.agent, args.user, console, data)


def list_skills(
    workspace: Path,
    skill_dirs: list[str],
    agent: str,
    user: str,
    console: Console,
    data: Path | None = None,
) -> int:
    """Print the skills an agent's user sees, and the folders skipped as invalid."""
    skills = Skills(skill_dirs)
    skills.bind(Workspace(workspace, data_dir=data) if workspace.is_dir() else None, agent)
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


def _bound(
    workspace: Path, agent: str, console: Console, data: Path | None
) -> tuple[Skills, Workspace] | None:
    if not workspace.is_dir():
        console.print(f"[red]no workspace at {escape(str(workspace))}[/]")
        return None
    skills = Skills()
    bound = Workspace(workspace, data_dir=data)
    skills.bind(bound, agent)
    return skills, bound


def list_drafts(workspace: Path, agent: str, console: Console, data: Path | None = None) -> int:
    """Print the drafts waiting for review: name, proposer, session, when, what they grant."""
    found = _bound(workspace, agent, console, data)
    if found is None:
        return 1
    skills, bound = found
    drafts = asyncio.run(skills.drafts())
    if not drafts:
        console.print("no drafts")
        return 0
    table = Table("draft", "proposed by", "session", "when (UTC)", "allowed-tools", "description")
    for draft in drafts:
        meta = draft_meta(bound, draft.folder)
        when = (
            datetime.fromtimestamp(draft.proposed_at, UTC).strftime("%Y-%m-%d %H:%M")
            if draft.proposed_at is not None
            else "?"
        )
        table.add_row(
            escape(draft.name),
            escape(draft.user_id if draft.user_id is not None else "unknown"),
            escape(draft.session_id or "?"),
            when,
            escape(" ".join(meta.allowed_tools) if meta is not None else "?"),
            escape(meta.description if meta is not None else "(invalid SKILL.md)"),
        )
    console.print(table)
    return 0


def draft_meta(workspace: Workspace, folder: str) -> SkillMeta | None:
    """The draft's front matter, or ``None`` when its ``SKILL.md`` is not valid."""
    try:
        text = asyncio.run(workspace.fs.read_text(f"{folder}/SKILL.md"))
        meta, _ = parse_skill_md(text, folder.rsplit("/", 1)[-1], where=folder)
    except (OSError, UnicodeDecodeError, SkillFormatError, WorkspaceError):
        return None
    return meta


def review_draft(
    workspace: Path,
    agent: str,
    name: str,
    console: Console,
    *,
    user: str | None,
    promote: bool,
    replace: bool = False,
    data: Path | None = None,
) -> int:
    """Promote or reject one draft, saying whose it was; 1 when that cannot be done."""
    found = _bound(workspace, agent, console, data)
    if found is None:
        return 1
    skills = found[0]
    try:
        if promote:
            draft = asyncio.run(skills.promote(name, user=user, replace=replace))
        else:
            draft = asyncio.run(skills.reject(name, user=user))
    except AmbiguousDraftError as exc:
        who = ", ".join(d.proposer for d in exc.drafts)
        console.print(
            f"[red]{len(exc.drafts)} drafts are named {escape(name)!r}, proposed by "
            f"{escape(who)}[/]: pass --user USER to say whose"
        )
        return 1
    except LookupError as exc:
        console.print(f"[red]{escape(str(exc))}[/]")
        return 1
    except (FileExistsError, SkillFormatError) as exc:
        console.print(f"[red]{escape(str(exc).replace('replace=True', '--replace'))}[/]")
        return 1
    done = f"installed skills/{name}" if promote else f"rejected draft {name!r}"
    console.print(f"{escape(done)}, proposed by {escape(draft.proposer)}")
    return 0
