"""Self-learning, opt-in: the model proposes skills as drafts; only the application installs
them.

Drafts live in the workspace at ``skills/_drafts/<name>/SKILL.md`` (a folder discovery never
lists). :func:`write_draft` validates before writing, so a draft is always a valid skill;
:func:`promote_draft` validates again (the file may have been edited since), moves every file
of the draft to ``skills/<name>/`` and removes the draft; :func:`reject_draft` removes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from harnessed.skills.spec import SKILL_FILE, SkillFormatError, parse_skill_md
from harnessed.workspace import Filesystem
from harnessed.workspace.paths import join

__all__ = ["DRAFTS_DIR", "promote_draft", "reject_draft", "render_skill_md", "write_draft"]

DRAFTS_DIR = "skills/_drafts"
_SKILLS_DIR = "skills"


def render_skill_md(
    name: str, description: str, instructions: str, allowed_tools: Sequence[str] = ()
) -> str:
    """A ``SKILL.md`` text for the given fields (front matter written by PyYAML)."""
    front: dict[str, str] = {"name": name, "description": description}
    if allowed_tools:
        front["allowed-tools"] = " ".join(allowed_tools)
    import yaml  # only when a draft is written

    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000)
    return f"---\n{head}---\n\n{instructions.strip()}\n"


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name or "/" in name or name.startswith(("_", ".")):
        raise ValueError(f"{name!r} is not a skill name")


async def write_draft(
    fs: Filesystem, name: str, description: str, instructions: str, allowed_tools: Sequence[str]
) -> str:
    """Validate and write a draft; returns its path. ``SkillFormatError`` names the rules
    broken (nothing is written then)."""
    _check_name(name)
    text = render_skill_md(name, description, instructions, allowed_tools)
    parse_skill_md(text, name, where=f"draft {name!r}")
    if not instructions.strip():
        raise SkillFormatError(f"draft {name!r}", ["the instructions (body) are empty"])
    path = join(DRAFTS_DIR, name, SKILL_FILE)
    await fs.write_text(path, text)
    return path


async def promote_draft(fs: Filesystem, name: str, *, replace: bool = False) -> str:
    """Install the draft ``name`` as ``skills/<name>``; returns the new folder."""
    _check_name(name)
    draft = join(DRAFTS_DIR, name)
    skill_md = join(draft, SKILL_FILE)
    if not await fs.exists(skill_md):
        raise LookupError(f"there is no draft skill named {name!r} (looked for {skill_md})")
    parse_skill_md(await fs.read_text(skill_md), name, where=skill_md)
    target = join(_SKILLS_DIR, name)
    if await fs.exists(target):
        if not replace:
            raise FileExistsError(
                f"a skill {name!r} is already installed at {target}; pass replace=True to "
                "replace it"
            )
        await fs.delete(target, recursive=True)
    for path in await fs.list_tree(draft):
        await fs.write(join(target, path[len(draft) + 1 :]), await fs.read(path))
    await fs.delete(draft, recursive=True)
    return target


async def reject_draft(fs: Filesystem, name: str) -> None:
    """Delete the draft ``name``."""
    _check_name(name)
    draft = join(DRAFTS_DIR, name)
    if not await fs.exists(draft):
        raise LookupError(f"there is no draft skill named {name!r}")
    await fs.delete(draft, recursive=True)
