"""``allowed-tools``: the tools an active skill pre-approves, as permission grants.

Entries are written as in other agents that use the format: ``Read``, ``Bash(git:*)``,
``Bash(npm run test)``, or this library's own tool names (``execute(git *)``). Common names
map to the built-in tools (``Bash`` → ``execute``, ``Read`` → ``read_file``, ``Write`` →
``write_file``, ``Edit`` → ``edit_file``, ``Grep`` → ``grep_files``, ``Glob`` → ``glob_files``,
``LS`` → ``list_files``). The text in parentheses matches the tool's main argument (the
command, the path, the pattern); ``prefix:*`` means "``prefix`` alone or followed by more".
Grants only allow: deny and ask rules, and plan mode, still apply to every call.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from harnessed.permissions.rules import PermissionRule

__all__ = ["TOOL_ALIASES", "grants_for"]

logger = logging.getLogger(__name__)

TOOL_ALIASES = {
    "Bash": "execute",
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "Grep": "grep_files",
    "Glob": "glob_files",
    "LS": "list_files",
}
_MAIN_ARGUMENT = {
    "execute": "command",
    "read_file": "path",
    "write_file": "path",
    "edit_file": "path",
    "grep_files": "pattern",
    "glob_files": "pattern",
    "list_files": "path",
}
_ENTRY = re.compile(r"^(?P<tool>[^()\s]+)(?:\((?P<spec>.*)\))?$", re.DOTALL)


def grants_for(entries: Sequence[str], skill: str = "") -> list[PermissionRule]:
    """Allow rules for the ``allowed-tools`` ``entries`` (unusable entries are skipped with a
    warning naming them)."""
    rules: list[PermissionRule] = []
    for entry in entries:
        match = _ENTRY.match(entry.strip())
        if match is None:
            logger.warning("skill %s: cannot read allowed-tools entry %r", skill, entry)
            continue
        tool = TOOL_ALIASES.get(match["tool"], match["tool"])
        spec = match["spec"]
        if spec is None or spec.strip() in ("", "*"):
            rules.append(PermissionRule.allow(tool))
            continue
        argument = _MAIN_ARGUMENT.get(tool)
        if argument is None:
            logger.warning(
                "skill %s: allowed-tools entry %r limits %r by argument, which is only "
                "understood for the built-in tools; it grants nothing",
                skill,
                entry,
                tool,
            )
            continue
        spec = spec.strip()
        if spec.endswith(":*"):
            prefix = spec[:-2]
            rules.append(PermissionRule.allow(tool, **{argument: _literal(prefix)}))
            rules.append(PermissionRule.allow(tool, **{argument: _literal(prefix) + " *"}))
        else:
            rules.append(PermissionRule.allow(tool, **{argument: spec}))
    return rules


def _literal(text: str) -> str:
    """``text`` as an fnmatch pattern matching itself only."""
    return re.sub(r"([*?\[])", r"[\1]", text)
