"""The path policy shared by every backend."""

from __future__ import annotations

import pytest

from harnessed.workspace import PathOutsideWorkspaceError, encode_part, normalize_path
from harnessed.workspace.paths import (
    glob_literal_prefix,
    glob_to_regex,
    join,
    normalize_pattern,
)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("", ""),
        (".", ""),
        ("./", ""),
        ("notes/a.md", "notes/a.md"),
        ("./notes//a.md", "notes/a.md"),
        ("notes/./a.md", "notes/a.md"),
        ("notes/x/../a.md", "notes/a.md"),
        ("notes/", "notes"),
        ("  spaced.txt ", "spaced.txt"),
        ("a..b/c", "a..b/c"),
    ],
)
def test_normalize_accepts_relative_paths(raw: str, clean: str) -> None:
    assert normalize_path(raw) == clean


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("..", "climbs above"),
        ("../x", "climbs above"),
        ("a/../../x", "climbs above"),
        ("/etc/passwd", "absolute"),
        ("//server/share", "absolute"),
        ("~/secrets", "absolute"),
        ("C:/Windows", "absolute"),
        ("a\x00b", "NUL"),
    ],
)
def test_normalize_refuses_escapes_with_a_clear_message(raw: str, reason: str) -> None:
    with pytest.raises(PathOutsideWorkspaceError) as info:
        normalize_path(raw)
    assert reason in str(info.value)
    assert repr(raw) in str(info.value)
    assert isinstance(info.value, PermissionError)


def test_patterns_follow_the_same_policy() -> None:
    assert normalize_pattern("./src//**/*.py") == "src/**/*.py"
    for bad in ["../*", "src/../../*", "/etc/*", "**/.."]:
        with pytest.raises(PathOutsideWorkspaceError):
            normalize_pattern(bad)
    with pytest.raises(ValueError):
        normalize_pattern("  ")


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("*.py", ["a.py", ".hidden.py"], ["src/a.py", "a.pyc"]),
        ("**/*.py", ["a.py", "src/a.py", "src/x/y/a.py"], ["a.txt"]),
        ("src/**", ["src/a", "src/x/y"], ["srcx/a", "other/src/a"]),
        ("src/**/test_*.py", ["src/test_a.py", "src/x/test_b.py"], ["src/x/a_test.py"]),
        ("file?.txt", ["file1.txt"], ["file10.txt", "file/.txt"]),
        ("[ab]*.md", ["a.md", "b1.md"], ["c.md"]),
        ("[!ab]*.md", ["c.md"], ["a.md"]),
        ("*.{md,txt}", ["a.md", "b.txt"], ["c.py"]),
        ("a+b(1).txt", ["a+b(1).txt"], ["aab1.txt"]),
    ],
)
def test_glob_to_regex(pattern: str, matches: list[str], misses: list[str]) -> None:
    regex = glob_to_regex(pattern)
    for path in matches:
        assert regex.match(path), (pattern, path)
    for path in misses:
        assert not regex.match(path), (pattern, path)


def test_glob_literal_prefix() -> None:
    assert glob_literal_prefix("src/pkg/**/*.py") == "src/pkg"
    assert glob_literal_prefix("*.py") == ""
    assert glob_literal_prefix("docs/a.md") == "docs"
    assert glob_literal_prefix("src/*/x/*.py") == "src"


def test_join() -> None:
    assert join("", "a", "", "b/c") == "a/b/c"
    assert join("a/", "/b") == "a/b"
    with pytest.raises(PathOutsideWorkspaceError):
        join("a", "../../b")


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("alice", "alice"),
        ("alice@example.com", "alice@example.com"),
        ("a/b", "a%2Fb"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        (".hidden", "%2Ehidden"),
        ("100%", "100%25"),
        ("x y", "x%20y"),
        ("ünï", "%C3%BCn%C3%AF"),
    ],
)
def test_encode_part(value: str, encoded: str) -> None:
    assert encode_part(value) == encoded
    assert "/" not in encoded and encoded not in (".", "..")


def test_encode_part_is_injective_and_refuses_empty() -> None:
    assert encode_part("a/b") != encode_part("a%2Fb")
    with pytest.raises(ValueError, match="user_id"):
        encode_part("", "user_id")
