"""The model's skill tools: ``load_skill`` and (opt-in) ``propose_skill``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessed.skills.catalog import Skill
from harnessed.skills.drafts import write_draft
from harnessed.skills.files import SkillFileError, is_skill_file, read_skill_file, skill_files
from harnessed.skills.spec import SKILL_FILE, SkillFormatError, split_tool_list
from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.decorator import tool

if TYPE_CHECKING:
    from harnessed.skills.capability import Skills

__all__ = ["load_skill_tool", "propose_skill_tool"]


def load_skill_tool(skills: Skills) -> Tool:
    """``load_skill(name, path="SKILL.md")`` over the caller's skills."""

    @tool(name="load_skill", read_only=True)
    async def load_skill(name: str, context: ToolContext, path: str = SKILL_FILE) -> str:
        """Load a skill: its instructions (path "SKILL.md", the default) or another file of
        the skill's folder, such as "references/guide.md".

        Args:
            name: The skill's name, as listed among the available skills.
            path: A file inside the skill's folder, relative to it.
        """
        try:
            skill = await skills.get(name, context.runtime)
        except LookupError as exc:
            raise ToolError(str(exc)) from None
        try:
            text = await read_skill_file(skill, path)
        except SkillFileError as exc:
            raise ToolError(str(exc)) from None
        if not is_skill_file(skill, path):
            return text
        await skills.record_use(skill, context)
        granted = skills.activate(skill, context.state)
        return await _loaded(skills, skill, text, granted)

    return load_skill


async def _loaded(skills: Skills, skill: Skill, body: str, granted: list[str]) -> str:
    where = await skills.execute_path(skill)
    files = await skill_files(skill)
    lines = [f'<skill name="{skill.name}">', body.strip(), "</skill>"]
    if where is not None:
        lines.append(
            f"The skill's folder for execute is {where} (run its scripts from there, e.g. "
            f"python3 {where}/scripts/<file>)."
        )
    if files:
        lines.append("Files of the skill (load them with load_skill(name, path)):")
        lines += [f"- {f}" for f in files]
    if granted:
        lines.append("Pre-approved for this session by the skill: " + ", ".join(granted))
    return "\n".join(lines)


def propose_skill_tool(skills: Skills) -> Tool:
    """``propose_skill``: a validated draft of the calling user (see
    :mod:`harnessed.skills.drafts`)."""

    @tool(name="propose_skill")
    async def propose_skill(
        name: str,
        description: str,
        instructions: str,
        context: ToolContext,
        allowed_tools: str = "",
    ) -> str:
        """Propose a new skill from what worked in this task. It is saved as a draft for the
        application to review; it is not available until it is installed.

        Args:
            name: Lower-case letters, digits and single hyphens, at most 64 characters.
            description: What the skill does and when to use it (at most 1,024 characters).
            instructions: The Markdown instructions of the skill.
            allowed_tools: Space-separated tools the skill needs pre-approved (optional).
        """
        try:
            await write_draft(
                skills.drafts_fs(),
                name,
                description,
                instructions,
                split_tool_list(allowed_tools) if allowed_tools.strip() else (),
                agent=skills.agent_name,
                user_id=context.user_id,
                session_id=context.session_id,
            )
        except (SkillFormatError, ValueError, PermissionError) as exc:
            raise ToolError(f"the draft was not saved: {exc}") from None
        return (
            f"Draft {name!r} saved for review (proposing it again replaces it); the application "
            "decides whether to install it."
        )

    return propose_skill
