"""The path policy every filesystem shares.

Workspace paths are relative POSIX strings such as ``"notes/a.md"``; the workspace root is
``""`` (``"."`` and ``"./"`` mean the same). :func:`normalize_path` is the single gate: it
collapses ``.`` and ``a/../b``, and refuses absolute paths, paths that climb above the root,
empty segments are dropped, and NUL bytes. Backends add their own checks on top (the local one
resolves symlinks and refuses any that lead outside its root).

Glob patterns follow the same rules and use the usual syntax: ``*`` and ``?`` stay inside one
path segment, ``**`` spans any number of directories, ``[abc]`` / ``[!abc]`` are character
classes and ``{a,b}`` lists alternatives.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache
from urllib.parse import quote

from harnessed.workspace.errors import PathOutsideWorkspaceError

__all__ = [
    "encode_part",
    "glob_literal_prefix",
    "glob_to_regex",
    "join",
    "normalize_path",
    "normalize_pattern",
]

_GLOB_MAGIC = re.compile(r"[*?\[{]")


def normalize_path(path: str) -> str:
    """Return ``path`` as a clean workspace-relative POSIX path (``""`` for the root).

    Raises :class:`PathOutsideWorkspaceError` for absolute paths, ``..`` escapes and NUL bytes.
    """
    if not isinstance(path, str):
        raise TypeError(f"workspace paths are strings, got {type(path).__name__}")
    if "\x00" in path:
        raise PathOutsideWorkspaceError(path, "it contains a NUL byte")
    text = path.strip()
    if text.startswith("/") or text.startswith("~") or _looks_like_drive(text):
        raise PathOutsideWorkspaceError(
            path, "absolute paths are not accepted; use a path relative to the workspace root"
        )
    clean = posixpath.normpath(text) if text else "."
    if clean == ".":
        return ""
    if clean == ".." or clean.startswith("../"):
        raise PathOutsideWorkspaceError(path, "it climbs above the workspace root with '..'")
    return clean


def normalize_pattern(pattern: str) -> str:
    """Check a glob pattern against the path policy; ``..`` segments are refused outright."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise ValueError("a glob pattern must be a non-empty string")
    text = pattern.strip()
    if "\x00" in text:
        raise PathOutsideWorkspaceError(pattern, "it contains a NUL byte")
    if text.startswith("/") or text.startswith("~") or _looks_like_drive(text):
        raise PathOutsideWorkspaceError(
            pattern, "absolute patterns are not accepted; use one relative to the workspace"
        )
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PathOutsideWorkspaceError(pattern, "glob patterns may not contain '..'")
    return "/".join(parts)


def join(*parts: str) -> str:
    """Join workspace-relative parts, skipping empty ones (``join("", "a")`` is ``"a"``)."""
    return normalize_path("/".join(p.strip("/") for p in parts if p and p.strip("/")))


def encode_part(value: str, what: str = "id") -> str:
    """Make an id safe to use as one path segment (``/``, ``..`` and friends are encoded).

    The encoding is reversible and injective, so two different ids never share a directory.
    Raises ``ValueError`` for an empty id.
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return _encoded(value)


@lru_cache(maxsize=1_024)
def _encoded(value: str) -> str:
    """``encode_part`` of a valid id (the same few ids are encoded at every request)."""
    encoded = quote(value, safe="-_@+=,")
    # "." and ".." (and hidden names) must not mean anything on disk: encode leading dots.
    stripped = encoded.lstrip(".")
    return "%2E" * (len(encoded) - len(stripped)) + stripped


def session_dir_parts(agent_id: str, user_id: str) -> tuple[str, str, str]:
    """``(<agent>, "sessions", <user>)``: where one user's session logs of an agent live, below
    the workspace's ``agents`` directory (BEHAVIOUR.md §5), ids encoded."""
    return (encode_part(agent_id, "agent_id"), "sessions", encode_part(user_id, "user_id"))


def glob_literal_prefix(pattern: str) -> str:
    """The leading directories of ``pattern`` that contain no wildcard (where a walk starts)."""
    parts = pattern.split("/")
    literal: list[str] = []
    for part in parts[:-1]:
        if _GLOB_MAGIC.search(part):
            break
        literal.append(part)
    return "/".join(literal)


@lru_cache(maxsize=256)
def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob pattern (see the module docstring) to a regex matching whole paths."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_braces = 0
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                before_ok = i == 0 or pattern[i - 1] == "/"
                after = i + 2
                if before_ok and after < n and pattern[after] == "/":
                    out.append("(?:.*/)?")
                    i = after + 1
                    continue
                if before_ok and after == n:
                    out.append(".*")
                    i = after
                    continue
                out.append("[^/]*")
                i = after
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\").replace("/", "") + "]")
                i = end
        elif c == "{":
            in_braces += 1
            out.append("(?:")
        elif c == "}" and in_braces:
            in_braces -= 1
            out.append(")")
        elif c == "," and in_braces:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if in_braces:
        raise ValueError(f"glob pattern {pattern!r} has an unclosed '{{'")
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _looks_like_drive(text: str) -> bool:
    return len(text) >= 2 and text[1] == ":" and text[0].isalpha()
