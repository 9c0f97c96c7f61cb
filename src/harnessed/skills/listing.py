"""The list of available skills, as an instruction that shrinks to fit the budget.

Every reasoning request names the skills the model may load. The list starts with each skill's
name and description; when the request does not fit, the compiler asks it to condense:
descriptions go first (from the end of the list; each recorded as
``omitted_for_budget:skills/<name>/description``), and only when none is left does the whole
list go (``omitted_for_budget:instruction/skills``). ``max_tokens`` caps the list on its own
before the compiler sees it, the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harnessed.capabilities.materials import Material
from harnessed.skills.catalog import Skill

__all__ = ["LISTING_ID", "skill_listing"]

LISTING_ID = "instruction/skills"

_HEAD = (
    "Skills are folders of instructions, scripts and reference files for particular tasks. "
    "When a task matches one of the skills below, call load_skill with its name before you "
    "start and follow what it says; load the files it mentions with load_skill(name, path). "
    "Available skills:"
)


def _line(skill: Skill, with_description: bool) -> str:
    if not with_description:
        return f"- {skill.name}"
    description = " ".join(skill.description.split())
    return f"- {skill.name}: {description}"


def skill_listing(
    skills: Sequence[Skill],
    *,
    max_tokens: int | None,
    count: Callable[[str], int],
    priority: int = 10,
) -> Material | None:
    """The listing of ``skills`` (``None`` when there is none), its descriptions cut to fit
    ``max_tokens`` (the names stay; the compiler may still drop the whole list)."""
    if not skills:
        return None
    material = _Listing(tuple(skills), len(skills), priority).material()
    while max_tokens is not None and material.condense is not None:
        excess = count(material.text) - max_tokens
        smaller = material.condense(excess, count) if excess > 0 else None
        if smaller is None:
            break
        material = smaller
    return material


class _Listing:
    """The listing with the first ``described`` skills keeping their description."""

    def __init__(self, skills: tuple[Skill, ...], described: int, priority: int) -> None:
        self.skills = skills
        self.described = described
        self.priority = priority

    def at(self, described: int) -> _Listing:
        return _Listing(self.skills, described, self.priority)

    def text(self) -> str:
        lines = [_HEAD]
        lines += [_line(s, i < self.described) for i, s in enumerate(self.skills)]
        hidden = len(self.skills) - self.described
        if hidden:
            lines.append(
                f"({hidden} skill descriptions were left out to save room; load a skill to "
                "read what it is for.)"
            )
        return "\n".join(lines)

    def material(self) -> Material:
        omitted = tuple(f"skills/{s.name}/description" for s in self.skills[self.described :])
        return Material(
            LISTING_ID,
            "skills",
            "skills",
            "skills",
            "system",
            self.text(),
            required=False,
            priority=self.priority,
            condense=self.condense if self.described else None,
            omits=omitted,
        )

    def condense(self, excess: int, count: Callable[[str], int]) -> Material | None:
        """Drop descriptions from the end until about ``excess`` tokens are saved."""
        if self.described == 0:
            return None
        saved, described = 0, self.described
        while described > 0 and saved < excess:
            described -= 1
            skill = self.skills[described]
            saved += max(count(_line(skill, True)) - count(_line(skill, False)), 1)
        return self.at(described).material()
