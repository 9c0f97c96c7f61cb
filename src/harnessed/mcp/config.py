"""Configurations: which MCP servers an agent uses and which of their resources it reads.

:class:`MCPServer` describes one server, reached over stdio (a command the agent starts) or
streamable HTTP (a URL). :class:`MCPResource` picks a resource, or a URI template filled from
the runtime context, to show the model as reference material. Both validate at construction
and name the field that is wrong.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

__all__ = ["MCPResource", "MCPServer"]

_ALIAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
_LAUNCHERS = frozenset({"uvx", "npx", "pipx", "bunx", "uv", "node", "deno", "docker", "pnpm"})


def _frozen(value: Mapping[str, str] | None, what: str) -> Mapping[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TypeError(f"MCPServer.{what} must map strings to strings")
    return MappingProxyType(dict(value))


def _positive(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"MCPServer.{what} must be a positive number of seconds, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class MCPServer:
    """One MCP server. Build with :meth:`stdio`, :meth:`http` or :meth:`parse`.

    The server is started (or connected) at the first agent call that needs it, shared by all
    of the agent's sessions, restarted at the next call after it crashed, and stopped by
    ``agent.close()``.
    """

    name: str
    """Alias of the server: prefixes its tool names when they clash, names it in errors."""
    command: str | None = None
    """stdio: the program to start."""
    args: tuple[str, ...] = ()
    """stdio: its arguments."""
    env: Mapping[str, str] | None = None
    """stdio: extra environment variables (added to a minimal default environment)."""
    cwd: str | None = None
    """stdio: the working directory of the server process."""
    url: str | None = None
    """streamable HTTP: the endpoint, e.g. ``http://127.0.0.1:8000/mcp``."""
    headers: Mapping[str, str] | None = None
    """streamable HTTP: headers sent with every request (authorization ...)."""
    timeout: float = 60.0
    """Seconds one tool call or resource read may take before it fails with a clear error."""
    startup_timeout: float = 30.0
    """Seconds to start the server and complete the handshake."""
    prefix_tools: bool = False
    """Always name the tools ``<name>_<tool>`` (by default only names that clash are prefixed)."""
    tools: tuple[str, ...] | None = None
    """Only these tools of the server (by their names on the server); ``None`` = all."""
    confirm_destructive: bool = True
    """Tools that may be destructive (not marked read-only, and not marked
    ``destructiveHint: false`` — the protocol's default) ask the user before they run even
    when no permission mode or rules are configured. With permissions on they are decided like
    any local tool that changes things."""
    required: bool = True
    """A server that cannot start fails the agent call; ``False`` runs without its tools (the
    start is tried again at the next call)."""
    protocol: str = "auto"
    """``"auto"`` negotiates the newest protocol both sides speak; ``"legacy"`` forces the
    2025-era ``initialize`` handshake (for servers that mishandle the discovery probe)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _ALIAS.match(self.name):
            raise ValueError(
                f"MCPServer.name {self.name!r} is invalid: use 1-32 letters, digits, '_' or '-', "
                "starting with a letter or digit"
            )
        if (self.command is None) == (self.url is None):
            raise ValueError(
                f"MCPServer {self.name!r} needs exactly one of 'command' (stdio) or 'url' (HTTP)"
            )
        if self.command is not None:
            if not isinstance(self.command, str) or not self.command.strip():
                raise ValueError(f"MCPServer {self.name!r}: command must be a non-blank string")
            if self.headers is not None:
                raise ValueError(f"MCPServer {self.name!r}: headers are for HTTP servers (url)")
        if self.url is not None:
            parts = urlsplit(self.url) if isinstance(self.url, str) else None
            if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(
                    f"MCPServer {self.name!r}: url must be an http(s) URL, got {self.url!r}"
                )
            if self.args or self.env is not None or self.cwd is not None:
                raise ValueError(
                    f"MCPServer {self.name!r}: args, env and cwd are for stdio servers (command)"
                )
        if isinstance(self.args, str) or not all(isinstance(a, str) for a in self.args):
            raise TypeError(f"MCPServer {self.name!r}: args must be a sequence of strings")
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", _frozen(self.env, "env"))
        object.__setattr__(self, "headers", _frozen(self.headers, "headers"))
        object.__setattr__(self, "timeout", _positive(self.timeout, "timeout"))
        object.__setattr__(
            self, "startup_timeout", _positive(self.startup_timeout, "startup_timeout")
        )
        if self.protocol not in ("auto", "legacy"):
            raise ValueError(
                f"MCPServer {self.name!r}: protocol must be 'auto' or 'legacy', got "
                f"{self.protocol!r}"
            )
        if self.tools is not None:
            if isinstance(self.tools, str) or not all(isinstance(t, str) and t for t in self.tools):
                raise TypeError(f"MCPServer {self.name!r}: tools must be a list of tool names")
            object.__setattr__(self, "tools", tuple(self.tools))

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """The command line or URL (without header values), for messages."""
        if self.url is not None:
            return self.url
        return shlex.join([self.command or "", *self.args])

    @classmethod
    def stdio(
        cls,
        command: str,
        *args: str,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server started as ``command args...``, speaking MCP over its stdin/stdout."""
        return cls(
            name=name or _alias_of_command(command, args),
            command=command,
            args=tuple(args),
            env=env,
            cwd=os.fspath(cwd) if cwd is not None else None,
            **options,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server reached over streamable HTTP at ``url``."""
        return cls(name=name or _alias_of_url(url), url=url, headers=headers, **options)

    @classmethod
    def parse(cls, spec: str, *, name: str | None = None, **options: Any) -> MCPServer:
        """A server from one string: an ``http(s)://`` URL, or a shell-quoted command line."""
        if not isinstance(spec, str) or not spec.strip():
            raise ValueError("an MCP server must be a URL or a command line, got a blank string")
        if spec.strip().startswith(("http://", "https://")):
            return cls.http(spec.strip(), name=name, **options)
        words = shlex.split(spec)
        return cls.stdio(words[0], *words[1:], name=name, **options)


def _sanitize(text: str) -> str:
    alias = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_-")[:32]
    return alias or "mcp"


def _alias_of_command(command: str, args: Sequence[str]) -> str:
    """``python -m mcp_server_time`` → ``mcp_server_time``; ``npx -y @x/server-git`` →
    ``server-git``; otherwise the program's name."""
    program = os.path.basename(command)
    if "-m" in args[:-1]:
        return _sanitize(args[list(args).index("-m") + 1].rsplit(".", 1)[-1])
    if program.startswith("python") or program in _LAUNCHERS:
        positional = [a for a in args if not a.startswith("-")]
        if positional:  # a package name, without its scope and version
            base = os.path.basename(positional[0])
            return _sanitize(re.split(r"[@=<>~]", base)[0] or base)
    return _sanitize(os.path.splitext(program)[0])


def _alias_of_url(url: str) -> str:
    """``https://docs.example.com/mcp`` → ``docs``; a local address → ``mcp``."""
    host = urlsplit(url).hostname or ""
    if not host or host == "localhost" or host.replace(".", "").isdigit() or ":" in host:
        return "mcp"
    return _sanitize(host.split(".")[0])


@dataclass(frozen=True, slots=True)
class MCPResource:
    """A resource of an MCP server shown to the model as reference material.

    ``uri`` is a resource URI, or a URI template (RFC 6570, ``notes://{user_id}/today``) whose
    variables are filled from the request: ``agent_id``, ``user_id``, ``session_id`` and the
    keys of ``RuntimeContext.extras``.
    """

    uri: str
    """The resource URI or URI template."""
    server: str | None = None
    """Alias of the server that has it (may be left out when the agent has one server)."""
    id: str | None = None
    """Block id in the context (default: derived from the URI)."""
    priority: int = 0
    """Higher is kept longer when the request must be shortened to fit."""
    required: bool = False
    """Never dropped to fit the budget (the request fails instead)."""
    max_chars: int = 20_000
    """Longer text is cut, with a note saying how much was left out."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Fixed template variables (the request's values win on a clash)."""

    def __post_init__(self) -> None:
        if not isinstance(self.uri, str) or not self.uri.strip():
            raise ValueError("MCPResource.uri must be a non-blank URI or URI template")
        if self.server is not None and not _ALIAS.match(str(self.server)):
            raise ValueError(f"MCPResource.server {self.server!r} is not a valid server name")
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            raise TypeError("MCPResource.priority must be an int")
        if (
            isinstance(self.max_chars, bool)
            or not isinstance(self.max_chars, int)
            or (self.max_chars < 100)
        ):
            raise ValueError(f"MCPResource.max_chars must be an int >= 100, got {self.max_chars!r}")
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    @property
    def is_template(self) -> bool:
        """The URI has ``{variables}`` filled from each request."""
        return "{" in self.uri and "}" in self.uri

    @property
    def block_id(self) -> str:
        if self.id is not None:
            return self.id
        return _sanitize(re.sub(r"[{}]", "", self.uri).replace("://", "-")).lower()[:64] or "res"
