"""The Agent Skills format (agentskills.io): parsing ``SKILL.md`` and checking its rules.

A skill is a folder holding ``SKILL.md``: YAML front matter between ``---`` lines, then a
Markdown body. The rules checked here are the standard's, as its reference validator
(``skills-ref``) applies them:

* only the fields ``name``, ``description``, ``license``, ``compatibility``, ``metadata`` and
  ``allowed-tools`` may appear;
* ``name``: required, non-empty, at most 64 characters, lower case, letters, digits and
  hyphens only, no leading, trailing or doubled hyphen, equal to the folder's name (both
  compared after Unicode NFKC normalization);
* ``description``: required, non-empty, at most 1,024 characters;
* ``compatibility``: a string of at most 500 characters.

Scalars are read as text, exactly as written (``version: 1.10`` stays ``"1.10"``), with
PyYAML's safe base loader: no objects, no implicit conversions. Duplicate keys, flow-style
collections (``{...}``, ``[...]``), anchors, aliases and type tags are refused, as the
reference does.

Where the reference accepts a shape the standard does not describe, a skill still loads
unchanged (skills published by others must work) and :attr:`SkillMeta.notes` says what was
normalized: a lower-case ``skill.md`` file, ``metadata`` values that are not text (lists,
nested maps: stored as JSON text, as the reference stores them as text), a ``metadata`` that is
not a map (ignored), a ``license`` that is not text (stored as text), an ``allowed-tools`` that
is neither text nor a list of text (ignored: it grants nothing).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ALLOWED_FIELDS",
    "MAX_COMPATIBILITY_LENGTH",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "SKILL_FILE",
    "SKILL_FILE_NAMES",
    "SkillFormatError",
    "SkillMeta",
    "check_front_matter",
    "front_matter_problems",
    "parse_skill_md",
    "split_front_matter",
]

SKILL_FILE = "SKILL.md"
SKILL_FILE_NAMES = (SKILL_FILE, "skill.md")
"""The names a skill's file may have, preferred first (the reference accepts ``skill.md``)."""
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1_024
MAX_COMPATIBILITY_LENGTH = 500
ALLOWED_FIELDS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
)


class SkillFormatError(ValueError):
    """A ``SKILL.md`` that breaks the format; ``problems`` lists every rule broken."""

    def __init__(self, where: str, problems: list[str]) -> None:
        self.where = where
        self.problems = list(problems)
        super().__init__(f"{where}: " + "; ".join(self.problems))


@dataclass(frozen=True, slots=True)
class SkillMeta:
    """The front matter of a valid skill."""

    name: str
    description: str
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    allowed_tools: tuple[str, ...] = ()
    """The ``allowed-tools`` entries, e.g. ``("Bash(git:*)", "Read")``."""
    notes: tuple[str, ...] = ()
    """Where the skill departs from the standard in a way that was accepted and normalized
    (``harnessed skills validate`` prints them)."""


def split_front_matter(text: str) -> tuple[str, str]:
    """``(front matter, body)`` of a ``SKILL.md`` text; ``ValueError`` when it has none."""
    if not text.startswith("---"):
        raise ValueError("SKILL.md must start with YAML front matter (a line '---')")
    parts = text.split("---", 2)
    if len(parts) < 3:
        raise ValueError("the front matter of SKILL.md is not closed by a '---' line")
    return parts[1], parts[2].strip()


def _load_yaml(front: str) -> dict[str, Any]:
    import yaml  # imported when the first skill is read: `import harnessed` stays light

    from harnessed.skills.front_matter import REFUSED_TOKENS, StrictLoader

    try:
        for token in yaml.scan(front):  # refused by the reference too
            refused = REFUSED_TOKENS.get(type(token))
            if refused is not None:
                line = token.start_mark.line + 1
                raise ValueError(f"YAML {refused} are not allowed (front matter line {line})")
        data = yaml.load(front, Loader=StrictLoader)  # a safe loader: strings, lists, maps only
    except yaml.YAMLError as exc:
        raise ValueError(f"the front matter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("the front matter must be a YAML mapping of fields")
    return data


def _non_empty_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def check_front_matter(data: Mapping[str, Any], folder: str | None = None) -> list[str]:
    """Every rule the front matter ``data`` breaks (empty when valid), structural and soft.

    ``folder`` is the name of the skill's folder (``None`` skips the name/folder check).
    """
    structural, soft = front_matter_problems(data, folder)
    return [*structural, *soft]


def front_matter_problems(
    data: Mapping[str, Any], folder: str | None = None
) -> tuple[list[str], list[str]]:
    """The rules ``data`` breaks, as ``(structural, soft)``.

    Structural problems make a skill unusable (no name or description, a name that is not
    its folder's or not a plain name): such a skill is skipped. Soft ones are the format's
    limits a usable skill may still break (a description over 1,024 characters, a long
    ``compatibility``, unknown fields, a name over 64 characters): published skills do, and
    they load with a warning naming the rule.
    """
    problems: list[str] = []
    soft: list[str] = []
    unknown = sorted(str(k) for k in data if k not in ALLOWED_FIELDS)
    if unknown:
        soft.append(
            f"unknown field(s) {', '.join(unknown)}: only {', '.join(sorted(ALLOWED_FIELDS))} "
            "are allowed"
        )
    if "name" not in data:
        problems.append("the required field 'name' is missing")
    elif not _non_empty_text(data["name"]):
        problems.append("'name' must be non-empty text")
    else:
        problems.extend(_name_problems(data["name"], folder))
        name = unicodedata.normalize("NFKC", data["name"].strip())
        if len(name) > MAX_NAME_LENGTH:
            soft.append(
                f"'name' {name!r} has {len(name)} characters; at most {MAX_NAME_LENGTH} are allowed"
            )
    if "description" not in data:
        problems.append("the required field 'description' is missing")
    elif not _non_empty_text(data["description"]):
        problems.append("'description' must be non-empty text")
    elif len(data["description"]) > MAX_DESCRIPTION_LENGTH:
        soft.append(
            f"'description' has {len(data['description'])} characters; at most "
            f"{MAX_DESCRIPTION_LENGTH} are allowed"
        )
    if "compatibility" in data:
        value = data["compatibility"]
        if not isinstance(value, str):
            soft.append("'compatibility' must be text")
        elif len(value) > MAX_COMPATIBILITY_LENGTH:
            soft.append(
                f"'compatibility' has {len(value)} characters; at most "
                f"{MAX_COMPATIBILITY_LENGTH} are allowed"
            )
    return problems, soft


def _name_problems(raw: str, folder: str | None) -> list[str]:
    name = unicodedata.normalize("NFKC", raw.strip())
    problems: list[str] = []
    if name != name.lower():
        problems.append(f"'name' {name!r} must be lower case")
    if name.startswith("-") or name.endswith("-"):
        problems.append(f"'name' {name!r} must not start or end with a hyphen")
    if "--" in name:
        problems.append(f"'name' {name!r} must not contain two hyphens in a row")
    if not all(c.isalnum() or c == "-" for c in name):
        problems.append(f"'name' {name!r} may only hold letters, digits and hyphens")
    if folder is not None and unicodedata.normalize("NFKC", folder) != name:
        problems.append(f"'name' {name!r} differs from its folder's name {folder!r}")
    return problems


def parse_skill_md(
    text: str, folder: str | None = None, *, where: str = SKILL_FILE, strict: bool = False
) -> tuple[SkillMeta, str]:
    """Parse and check a ``SKILL.md``: ``(front matter, body)``.

    Raises :class:`SkillFormatError` listing the structural rules broken (``where`` names the
    file in the message); a soft limit broken becomes a note naming the rule (see
    :func:`front_matter_problems`), or an error too with ``strict=True`` (for drafts the
    model writes).
    """
    try:
        front, body = split_front_matter(text)
        data = _load_yaml(front)
    except ValueError as exc:
        raise SkillFormatError(where, [str(exc)]) from None
    problems, soft = front_matter_problems(data, folder)
    if strict:
        problems += soft
    if problems:
        raise SkillFormatError(where, problems)
    notes: list[str] = [f"breaks a soft limit of the format: {rule}" for rule in soft]
    metadata = _metadata(data.get("metadata"), notes)
    license_ = data.get("license")
    if license_ is not None and not isinstance(license_, str):
        notes.append("'license' should be text; it was stored as text")
        license_ = _as_text(license_)
    tools = data.get("allowed-tools")
    if tools is not None and not (
        isinstance(tools, str)
        or (isinstance(tools, list) and all(isinstance(t, str) for t in tools))
    ):
        notes.append(
            "'allowed-tools' should be a space-separated text of tool names; it was ignored "
            "(it grants nothing)"
        )
        tools = None
    return (
        SkillMeta(
            name=unicodedata.normalize("NFKC", data["name"].strip()),
            description=data["description"].strip(),
            license=license_,
            compatibility=_as_text(data["compatibility"]) if "compatibility" in data else None,
            metadata=metadata,
            allowed_tools=split_tool_list(tools),
            notes=tuple(notes),
        ),
        body,
    )


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _metadata(value: Any, notes: list[str]) -> dict[str, str]:
    """``metadata`` as names → text (the reference's normalization, noted when needed)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        notes.append("'metadata' should map names to text; it was ignored")
        return {}
    odd = sorted(str(k) for k, v in value.items() if not isinstance(v, str))
    if odd:
        notes.append(f"'metadata' values should be text; {', '.join(odd)} stored as JSON text")
    return {str(k): _as_text(v) for k, v in value.items()}


def split_tool_list(value: str | list[str] | None) -> tuple[str, ...]:
    """``allowed-tools`` entries: split on spaces (and commas) outside parentheses, so
    ``Bash(git add:*) Read`` gives ``("Bash(git add:*)", "Read")``."""
    if value is None:
        return ()
    texts = value if isinstance(value, list) else [value]
    entries: list[str] = []
    for text in texts:
        depth, current = 0, list[str]()
        for char in text:
            if char == "(":
                depth += 1
            elif char == ")":
                depth = max(depth - 1, 0)
            if depth == 0 and (char.isspace() or char == ","):
                if current:
                    entries.append("".join(current))
                current = []
                continue
            current.append(char)
        if current:
            entries.append("".join(current))
    return tuple(entries)
