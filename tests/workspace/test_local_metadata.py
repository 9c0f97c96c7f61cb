"""Metadata lookups of the local filesystem run on the calling thread unless turned off."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harnessed.workspace import LocalFilesystem, Workspace
from harnessed.workspace.errors import (
    FileNotFoundInWorkspaceError,
    PathNotInViewError,
    PathOutsideWorkspaceError,
)


def _count_handoffs(fs: LocalFilesystem) -> list[str]:
    seen: list[str] = []
    original = fs._run

    async def counting(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        seen.append(getattr(fn, "__name__", repr(fn)))
        return await original(fn, *args, **kwargs)

    fs._run = counting  # type: ignore[method-assign]
    return seen


@pytest.mark.parametrize("inline", [True, False])
async def test_exists_and_stat_answer_the_same_either_way(tmp_path: Path, inline: bool):
    fs = LocalFilesystem(tmp_path, metadata_inline=inline)
    handoffs = _count_handoffs(fs)
    await fs.write_text("notes/a.md", "hello")
    handoffs.clear()
    assert await fs.exists("notes/a.md")
    assert await fs.exists("notes")
    assert not await fs.exists("notes/missing.md")
    info = await fs.stat("notes/a.md")
    assert (info.size, info.is_dir) == (5, False)
    with pytest.raises(FileNotFoundInWorkspaceError):
        await fs.stat("nope.md")
    assert handoffs == ([] if inline else ["_info"] * 5)


async def test_the_inline_walk_keeps_the_symlink_rules(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "link").symlink_to(outside)
    fs = LocalFilesystem(root)
    assert fs.metadata_inline
    with pytest.raises(PathOutsideWorkspaceError, match="symbolic link"):
        await fs.exists("link/secret.txt")


async def test_the_model_view_inherits_the_setting_and_still_hides_runtime_data(tmp_path: Path):
    for inline in (True, False):
        workspace = Workspace(LocalFilesystem(tmp_path, metadata_inline=inline))
        await workspace.fs.write_text(".harnessed/state.json", "{}")
        await workspace.fs.write_text("src/app.py", "x = 1")
        view = workspace.view("agent", "u", "s")
        assert view.metadata_inline is inline
        assert await view.exists("src/app.py")
        with pytest.raises(PathNotInViewError, match="runtime data"):
            await view.exists(".harnessed/state.json")


def test_a_wrong_value_is_a_clear_error(tmp_path: Path):
    with pytest.raises(TypeError, match="metadata_inline must be True or False"):
        LocalFilesystem(tmp_path, metadata_inline="yes")  # type: ignore[arg-type]
