"""Permission modes, rules and decisions: the vocabulary of the permission check.

A :class:`PermissionRule` names a tool (exactly, or with ``*``/``?`` wildcards) and optionally
patterns for its arguments; it ``allow``s, ``deny``s or ``ask``s for that call. Patterns match
the whole text of an argument (``fnmatch`` style, case-sensitive), so
``PermissionRule.deny("execute", command="rm *")`` denies any command starting with ``rm ``.
Patterns are a convenience for routine decisions, not a sandbox: a command such as
``git status; rm -rf x`` matches ``git status*``.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, TypeAlias, get_args

from harnessed.messages import ToolUseBlock

__all__ = [
    "PermissionBehavior",
    "PermissionDecision",
    "PermissionMode",
    "PermissionRule",
]

PermissionBehavior: TypeAlias = Literal["allow", "deny", "ask"]
_BEHAVIORS: tuple[str, ...] = get_args(PermissionBehavior)


class PermissionMode(StrEnum):
    """How calls that no rule decides are treated.

    * ``default``: read-only tools and the harness's own state tools run; anything else asks.
    * ``accept_edits``: like ``default``, and file edits (``write_file``, ``edit_file``) run too.
    * ``explore``: only read-only tools, the plan tools and ``todo_write`` run; the rest is
      denied without asking.
    * ``bypass``: everything runs unless a deny rule, an ask rule or the tool's own check says
      otherwise.
    * ``dont_ask``: like ``default``, but every "ask" becomes "deny" (for unattended runs).
    """

    DEFAULT = "default"
    ACCEPT_EDITS = "accept_edits"
    EXPLORE = "explore"
    BYPASS = "bypass"
    DONT_ASK = "dont_ask"

    @classmethod
    def parse(cls, value: PermissionMode | str, name: str = "permission_mode") -> PermissionMode:
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(m.value for m in cls)
            raise ValueError(f"{name} must be one of {allowed}; got {value!r}") from None


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    """The answer of a permission check for one call."""

    behavior: PermissionBehavior
    reason: str
    """Why: shown to the application's user when asking, and to the model when denying."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """Extra data for the application's confirmation UI (e.g. the plan to approve)."""
    declined_message: str | None = None
    """What the model is told when the user declines (default: a generic sentence)."""

    def __post_init__(self) -> None:
        if self.behavior not in _BEHAVIORS:
            raise ValueError(
                f"PermissionDecision.behavior must be one of {', '.join(_BEHAVIORS)}; "
                f"got {self.behavior!r}"
            )
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError("PermissionDecision.reason must be non-blank text")

    @classmethod
    def allow(cls, reason: str) -> PermissionDecision:
        return cls("allow", reason)

    @classmethod
    def deny(cls, reason: str) -> PermissionDecision:
        return cls("deny", reason)

    @classmethod
    def ask(
        cls,
        reason: str,
        *,
        details: Mapping[str, Any] | None = None,
        declined_message: str | None = None,
    ) -> PermissionDecision:
        return cls("ask", reason, dict(details or {}), declined_message)


@dataclass(frozen=True, slots=True)
class PermissionRule:
    """Allow, deny or ask for calls of a tool, optionally only when arguments match patterns."""

    tool: str
    """Tool name; ``*`` and ``?`` wildcards are allowed (``"*"`` matches every tool)."""
    behavior: PermissionBehavior
    args: Mapping[str, str] = field(default_factory=dict)
    """Argument name → pattern for the argument's text; all must match."""
    _patterns: tuple[re.Pattern[str], tuple[tuple[str, re.Pattern[str]], ...]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str) or not self.tool.strip():
            raise ValueError("PermissionRule.tool must be a non-blank tool name or pattern")
        if self.behavior not in _BEHAVIORS:
            raise ValueError(
                f"PermissionRule.behavior must be one of {', '.join(_BEHAVIORS)}; "
                f"got {self.behavior!r}"
            )
        if not isinstance(self.args, Mapping):
            raise ValueError("PermissionRule.args must map argument names to patterns")
        for key, pattern in self.args.items():
            if not isinstance(key, str) or not key or not isinstance(pattern, str):
                raise ValueError(
                    f"PermissionRule.args must map argument names to text patterns, "
                    f"got {key!r}: {pattern!r}"
                )
        object.__setattr__(self, "args", dict(self.args))
        compiled = tuple((k, _compile(p)) for k, p in self.args.items())
        object.__setattr__(self, "_patterns", (_compile(self.tool), compiled))

    @classmethod
    def allow(cls, tool: str, **args: str) -> PermissionRule:
        return cls(tool, "allow", args)

    @classmethod
    def deny(cls, tool: str, **args: str) -> PermissionRule:
        return cls(tool, "deny", args)

    @classmethod
    def ask(cls, tool: str, **args: str) -> PermissionRule:
        return cls(tool, "ask", args)

    def matches(self, call: ToolUseBlock) -> bool:
        tool, args = self._patterns
        if tool.match(call.name) is None:
            return False
        for key, pattern in args:
            if key not in call.input:
                return False
            if pattern.match(_argument_text(call.input[key])) is None:
                return False
        return True

    def describe(self) -> str:
        """``tool(arg=pattern, ...)`` as written in the rule."""
        if not self.args:
            return self.tool
        inner = ", ".join(f"{k}={v}" for k, v in self.args.items())
        return f"{self.tool}({inner})"

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "behavior": self.behavior, "args": dict(self.args)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PermissionRule:
        if not isinstance(data, Mapping) or "tool" not in data or "behavior" not in data:
            raise ValueError(f"a permission rule needs 'tool' and 'behavior', got {data!r}")
        return cls(data["tool"], data["behavior"], dict(data.get("args") or {}))


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern), re.DOTALL)


def _argument_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
