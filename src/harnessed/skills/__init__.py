"""Agent Skills (agentskills.io): discovery, validation, listing, loading and drafts.

``Skills`` is the capability; ``parse_skill_md`` / ``check_front_matter`` validate the format;
``validate_skill_dir`` checks one folder (what ``harnessed skills validate`` runs).
"""

from harnessed.skills.capability import Skills
from harnessed.skills.catalog import Skill, SkillCatalog, SkillLayer, SkillProblem
from harnessed.skills.drafts import AmbiguousDraftError, SkillDraft
from harnessed.skills.grants import TOOL_ALIASES, grants_for
from harnessed.skills.mounts import SANDBOX_SKILLS_ROOT, SkillMount
from harnessed.skills.spec import (
    ALLOWED_FIELDS,
    SKILL_FILE,
    SKILL_FILE_NAMES,
    SkillFormatError,
    SkillMeta,
    check_front_matter,
    parse_skill_md,
)
from harnessed.skills.validate import validate_skill_dir

__all__ = [
    "ALLOWED_FIELDS",
    "SANDBOX_SKILLS_ROOT",
    "SKILL_FILE",
    "SKILL_FILE_NAMES",
    "TOOL_ALIASES",
    "AmbiguousDraftError",
    "Skill",
    "SkillCatalog",
    "SkillDraft",
    "SkillFormatError",
    "SkillLayer",
    "SkillMeta",
    "SkillMount",
    "SkillProblem",
    "Skills",
    "check_front_matter",
    "grants_for",
    "parse_skill_md",
    "validate_skill_dir",
]
