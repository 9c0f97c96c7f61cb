"""LocalFilesystem: confinement on a real disk, atomic writes, symlinks."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harnessed.workspace import (
    FileNotFoundInWorkspaceError,
    IsADirectoryInWorkspaceError,
    LocalFilesystem,
    NotADirectoryInWorkspaceError,
    PathOutsideWorkspaceError,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
def fs(root: Path) -> LocalFilesystem:
    return LocalFilesystem(root)


def test_root_is_created_unless_told_not_to(tmp_path: Path) -> None:
    LocalFilesystem(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b").is_dir()
    with pytest.raises(NotADirectoryError, match="not a directory"):
        LocalFilesystem(tmp_path / "missing", create=False)


async def test_absolute_paths_inside_the_root_become_relative(
    fs: LocalFilesystem, root: Path
) -> None:
    assert fs.normalize(str(root / "notes" / "a.md")) == "notes/a.md"
    assert fs.normalize(str(root)) == ""
    with pytest.raises(PathOutsideWorkspaceError, match="outside the workspace"):
        fs.normalize(str(root.parent / "other.txt"))
    with pytest.raises(PathOutsideWorkspaceError):
        fs.normalize(str(root) + "/../escape")
    with pytest.raises(PathOutsideWorkspaceError):
        fs.normalize(str(root) + "-sibling/x")


async def test_a_symlinked_root_works(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    fs = LocalFilesystem(tmp_path / "alias")
    await fs.write_text("a.txt", "x")
    assert (real / "a.txt").read_text() == "x"
    assert fs.normalize(str(tmp_path / "alias" / "a.txt")) == "a.txt"
    assert fs.normalize(str(real / "a.txt")) == "a.txt"


async def test_symlinks_leading_outside_are_refused(
    fs: LocalFilesystem, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "secret_link").symlink_to(outside / "secret")
    (root / "dangling_out").symlink_to(tmp_path / "nowhere")
    for op in (
        fs.read("secret_link"),
        fs.read("out/secret"),
        fs.write_text("out/new", "x"),
        fs.write_text("dangling_out", "x"),
        fs.append_text("secret_link", "x"),
        fs.ls("out"),
        fs.stat("out"),
        fs.read_lines("secret_link"),
        fs.delete("out/secret"),
        fs.mkdir("out/sub"),
    ):
        with pytest.raises(PathOutsideWorkspaceError, match="symbolic link"):
            await op
    assert not (tmp_path / "nowhere").exists()
    assert not (outside / "new").exists()
    assert (outside / "secret").read_text() == "s"


async def test_writes_are_atomic_and_keep_the_mode(fs: LocalFilesystem, root: Path) -> None:
    await fs.write_text("run.sh", "echo 1\n")
    os.chmod(root / "run.sh", 0o755)
    await fs.write_text("run.sh", "echo 2\n")
    assert (root / "run.sh").read_text() == "echo 2\n"
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o755
    assert sorted(p.name for p in root.iterdir()) == ["run.sh"]  # no temp files left behind


async def test_a_failed_write_leaves_the_old_content(
    fs: LocalFilesystem, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await fs.write_text("keep.txt", "original")

    def broken_replace(src: str, dst: str, **_: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        await fs.write_text("keep.txt", "new")
    assert (root / "keep.txt").read_text() == "original"
    assert sorted(p.name for p in root.iterdir()) == ["keep.txt"]


async def test_append_is_in_place(fs: LocalFilesystem, root: Path) -> None:
    assert fs.appends_in_place
    await fs.append_text("memory/2026-01-01.md", "- one\n")
    inode = (root / "memory" / "2026-01-01.md").stat().st_ino
    await fs.append_text("memory/2026-01-01.md", "- two\n")
    assert (root / "memory" / "2026-01-01.md").read_text() == "- one\n- two\n"
    assert (root / "memory" / "2026-01-01.md").stat().st_ino == inode


async def test_deleting_a_symlink_removes_the_link_only(fs: LocalFilesystem, root: Path) -> None:
    await fs.write_text("real/a.txt", "x")
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    await fs.delete("alias", recursive=True)
    assert not (root / "alias").exists() and (root / "real" / "a.txt").exists()
    with pytest.raises(IsADirectoryInWorkspaceError, match="recursive"):
        await fs.delete("real")
    await fs.delete("real", recursive=True)
    assert not (root / "real").exists()
    with pytest.raises(IsADirectoryInWorkspaceError):
        await fs.delete("")
    with pytest.raises(FileNotFoundInWorkspaceError):
        await fs.delete("real")


async def test_walks_do_not_follow_directory_links(fs: LocalFilesystem, root: Path) -> None:
    await fs.write_text("a/b.txt", "needle")
    (root / "a" / "loop").symlink_to(root, target_is_directory=True)
    (root / "dangling").symlink_to(root / "nothing")
    assert [i.path for i in await fs.glob("**/*")] == ["a/b.txt"]
    assert [m.path for m in await fs.grep("needle")] == ["a/b.txt"]
    names = {i.path: i for i in await fs.ls("")}
    assert set(names) == {"a", "dangling"} and not names["dangling"].is_dir


async def test_paths_through_files_are_clear_errors(fs: LocalFilesystem) -> None:
    await fs.write_text("file.txt", "x")
    with pytest.raises(NotADirectoryInWorkspaceError, match="parent"):
        await fs.write_text("file.txt/child", "y")
    with pytest.raises(NotADirectoryInWorkspaceError):
        await fs.mkdir("file.txt/sub")
    assert not await fs.exists("file.txt/child")
    with pytest.raises(IsADirectoryInWorkspaceError):
        await fs.write_text("", "x")
    await fs.mkdir("d/e")
    with pytest.raises(IsADirectoryInWorkspaceError, match="'d/e'"):
        await fs.write_text("d/e", "x")


async def test_stat_and_size(fs: LocalFilesystem) -> None:
    await fs.write("data.bin", b"\x00\x01\x02")
    info = await fs.stat("data.bin")
    assert (info.path, info.is_dir, info.size, info.name) == ("data.bin", False, 3, "data.bin")
    assert info.modified is not None
    assert await fs.size("data.bin") == 3
    assert (await fs.stat("")).is_dir
    with pytest.raises(FileNotFoundInWorkspaceError, match="'nope'"):
        await fs.stat("nope")
