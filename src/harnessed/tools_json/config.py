"""Reading ``tools.json``: allow / deny patterns and MCP servers, ``${ENV}`` substituted."""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TOOLS_JSON", "ToolsConfig", "parse_tools_json", "read_tools_json"]

logger = logging.getLogger(__name__)

TOOLS_JSON = "tools.json"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FIELDS = frozenset({"allow", "deny", "mcpServers"})


@dataclass(frozen=True, slots=True)
class ToolsConfig:
    """What a workspace's ``tools.json`` says."""

    allow: tuple[str, ...] | None = None
    """Tool name patterns (``*`` and ``?`` as in shell globs) that may be offered; ``None``:
    every tool."""
    deny: tuple[str, ...] = ()
    """Patterns never offered (deny wins over allow)."""
    mcp_servers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """``mcpServers``: name → the server's settings (``command``/``args``/``env``/``cwd`` or
    ``url``/``headers``, and any other :class:`~harnessed.mcp.MCPServer` field)."""
    source: str = TOOLS_JSON

    def __post_init__(self) -> None:
        for name, patterns in (("allow", self.allow or ()), ("deny", self.deny)):
            if isinstance(patterns, str) or not all(isinstance(p, str) and p for p in patterns):
                raise ValueError(f"{self.source}: {name!r} must be a list of tool names")
        object.__setattr__(self, "deny", tuple(self.deny))
        if self.allow is not None:
            object.__setattr__(self, "allow", tuple(self.allow))

    def offers(self, tool_name: str) -> bool:
        """Whether ``tool_name`` may be offered and called."""
        if any(fnmatch.fnmatchcase(tool_name, p) for p in self.deny):
            return False
        return self.allow is None or any(fnmatch.fnmatchcase(tool_name, p) for p in self.allow)

    def servers(self) -> list[Any]:
        """The declared MCP servers as :class:`~harnessed.mcp.MCPServer` objects (the ``mcp``
        extra); a bad declaration is a ``ValueError`` naming the server and the file."""
        from harnessed.mcp import MCPServer

        found = []
        for name, settings in self.mcp_servers.items():
            if not isinstance(settings, Mapping):
                raise ValueError(f"{self.source}: mcpServers.{name} must be an object")
            options = dict(settings)
            options.pop("type", None)  # "stdio" / "http": told by command / url already
            if "args" in options and isinstance(options["args"], list):
                options["args"] = tuple(options["args"])
            try:
                found.append(MCPServer(name=name, **options))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{self.source}: mcpServers.{name}: {exc}") from None
        return found


def _substitute(value: Any, where: str, missing: set[str]) -> Any:
    if isinstance(value, str):

        def variable(found: re.Match[str]) -> str:
            name = found.group(1)
            if name not in os.environ:
                missing.add(name)
                return ""
            return os.environ[name]

        return _VARIABLE.sub(variable, value)
    if isinstance(value, list):
        return [_substitute(v, where, missing) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, where, missing) for k, v in value.items()}
    return value


def parse_tools_json(text: str, source: str = TOOLS_JSON) -> ToolsConfig:
    """A ``tools.json`` text as a :class:`ToolsConfig`; ``ValueError`` names what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{source} must hold a JSON object with allow, deny and mcpServers")
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        logger.warning("%s: unknown field(s) %s ignored", source, ", ".join(unknown))
    missing: set[str] = set()
    data = _substitute(data, source, missing)
    for name in sorted(missing):
        logger.warning(
            "%s names the environment variable %s, which is not set: it was left empty",
            source,
            name,
        )
    servers = data.get("mcpServers") or {}
    if not isinstance(servers, dict):
        raise ValueError(f"{source}: mcpServers must be an object of name -> settings")
    return ToolsConfig(
        allow=data.get("allow"), deny=data.get("deny") or (), mcp_servers=servers, source=source
    )


def read_tools_json(root: str | os.PathLike[str] | None) -> ToolsConfig | None:
    """The ``tools.json`` of a local workspace root (``None`` when there is none)."""
    if root is None:
        return None
    path = Path(root) / TOOLS_JSON
    if not path.is_file():
        return None
    return parse_tools_json(path.read_text(encoding="utf-8"), str(path))
