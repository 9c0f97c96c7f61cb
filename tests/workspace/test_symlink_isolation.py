"""No symbolic link takes one user into another's data, on the view of every local backend.

Bob makes a link (every shape of :mod:`tests.support.symlink_shapes`: where it lives times how
its target is written) and then reads, writes, edits, appends, deletes, lists, globs and greps
through it. The view must check the whole path a link leads to, not just its target: a link
to the workspace root followed by ``agents/bot/users/alice/MEMORY.md`` is Alice's memory.
Each shape is tried on a :class:`LocalFilesystem` workspace and on fsspec's local filesystem
(``file://`` through :class:`FsspecFilesystem`), where links exist too. A positive control
(the shared notes read through the same link) proves every link really leads to the root.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from harnessed.workspace import (
    FsspecFilesystem,
    MemoryFilesystem,
    PathNotInViewError,
    PathOutsideWorkspaceError,
    ViewFilesystem,
    Workspace,
    WorkspaceError,
)
from tests.support.symlink_shapes import (
    ALICE_FILES,
    HIDDEN_SHAPES,
    PLANT,
    ROOT_SHAPES,
    SECRET,
    SHARED,
    Shape,
    alices_bytes,
    build_workspace,
    make_link,
)

BACKENDS = ("local", "fsspec-file")
REFUSED = (PathNotInViewError, PathOutsideWorkspaceError)


def bobs_view(given: Path, backend: str) -> ViewFilesystem:
    root = given if backend == "local" else FsspecFilesystem(f"file://{given}")
    return Workspace(root).view("bot", "bob", "s1")


async def assert_nothing_of_alice_through(
    view: ViewFilesystem, link: str, *, live: bool = True
) -> None:
    """Every operation through ``link`` is refused, or shows nothing of Alice's; ``live``:
    the link itself works (else everything through it is refused)."""
    for rel in ALICE_FILES:
        path = f"{link}/{rel}"
        with pytest.raises(REFUSED):
            await view.read(path)
        with pytest.raises(REFUSED):
            await view.read_lines(path)
        with pytest.raises(REFUSED):
            await view.stat(path)
        with pytest.raises(REFUSED):
            await view.write_text(path, PLANT)
        with pytest.raises(REFUSED):
            await view.edit(path, SECRET, PLANT)
        with pytest.raises(REFUSED):
            await view.append_text(path, PLANT)
        with pytest.raises(REFUSED):
            await view.delete(path)
        with pytest.raises(REFUSED):
            await view.grep(SECRET, path)
        parent = path.rsplit("/", 1)[0]
        with pytest.raises(REFUSED):
            await view.ls(parent)
        with pytest.raises(REFUSED):
            await view.delete(parent, recursive=True)
    with pytest.raises(REFUSED):
        await view.write_text(f"{link}/agents/bot/users/alice/memory/new.md", PLANT)
    with pytest.raises(REFUSED):
        await view.mkdir(f"{link}/agents/bot/users/alice/extra")
    for hidden in ("agents", ".harnessed", "large_tool_results", "agents/bot/sessions"):
        with pytest.raises(REFUSED):
            await view.ls(f"{link}/{hidden}")
        with pytest.raises(REFUSED):
            await view.glob("**/*", f"{link}/{hidden}")
    for where in ("", "notes"):
        assert await view.grep(SECRET, where) == []
    if not live:
        for action in (view.ls(link), view.glob("**/*", link), view.grep(SECRET, link)):
            with pytest.raises(REFUSED):
                await action
        with pytest.raises(REFUSED):
            await view.read(f"{link}/notes/shared.md")
        return
    shown = [i.path for i in await view.ls(link)]
    assert f"{link}/notes" in shown  # the link works...
    assert not {f"{link}/agents", f"{link}/.harnessed", f"{link}/large_tool_results"} & set(
        shown
    )  # ...and shows no hidden area
    walked = [
        *(i.path for i in await view.glob("**/*", link)),
        *(i.path for i in await view.glob(f"{link}/**/*")),
        *(i.path for i in await view.glob(f"{link}/**/*.md")),
        *await view.list_tree(link),
    ]
    assert f"{link}/notes/shared.md" in walked
    assert not [p for p in walked if "alice" in p], walked
    for where in (link, ""):
        assert await view.grep(SECRET, where) == []
        assert await view.grep(SECRET, where, glob="*.md") == []
    assert [m.path for m in await view.grep("team notes", link)] == [f"{link}/notes/shared.md"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", ROOT_SHAPES, ids=lambda s: s.id)
async def test_a_link_to_the_root_reaches_nothing_of_another_user(
    tmp_path: Path, shape: Shape, backend: str
) -> None:
    real, given = build_workspace(tmp_path)
    link = make_link(real, given, shape)
    before = alices_bytes(real)
    view = bobs_view(given, backend)
    if shape.live:
        assert await view.read_text(f"{link}/notes/shared.md") == SHARED  # the link works
    await assert_nothing_of_alice_through(view, link, live=shape.live)
    assert alices_bytes(real) == before


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", HIDDEN_SHAPES, ids=lambda s: s.id)
async def test_a_link_straight_into_a_hidden_place_is_refused(
    tmp_path: Path, shape: Shape, backend: str
) -> None:
    real, given = build_workspace(tmp_path)
    link = make_link(real, given, shape)
    before = alices_bytes(real)
    view = bobs_view(given, backend)
    for path in (link, f"{link}/MEMORY.md", f"{link}/s1.json"):
        with pytest.raises(REFUSED):
            await view.read(path)
        with pytest.raises(REFUSED):
            await view.write_text(path, PLANT)
    with pytest.raises(REFUSED):
        await view.ls(link)
    everything = [i.path for i in await view.glob("**/*")]
    assert "notes/shared.md" in everything and not [p for p in everything if "alice" in p]
    assert await view.grep(SECRET) == []
    assert alices_bytes(real) == before
    assert not (real / "agents/bot/users/alice/new.md").exists()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_chains_loops_and_dangling_links(tmp_path: Path, backend: str) -> None:
    real, given = build_workspace(tmp_path)
    # a chain of three links ending at the root, a loop, and a link that dangles until the
    # root appears behind it
    (real / "c1").symlink_to("c2")
    (real / "c2").symlink_to("proj/c3")
    (real / "proj" / "c3").symlink_to("..")
    (real / "loop_a").symlink_to("loop_b")
    (real / "loop_b").symlink_to("loop_a")
    (real / "proj" / "self").symlink_to(".")
    (real / "later").symlink_to("not_yet")
    before = alices_bytes(real)
    view = bobs_view(given, backend)
    await assert_nothing_of_alice_through(view, "c1")
    with pytest.raises((WorkspaceError, OSError)):
        await view.read("loop_a/agents/bot/users/alice/MEMORY.md")
    # a walk meets the loops and the self-link and neither hangs nor descends
    found = [i.path for i in await view.glob("**/*", "proj")]
    assert not [p for p in found if "alice" in p]
    assert await view.grep(SECRET, "proj") == []
    with pytest.raises(FileNotFoundError):
        await view.read("later/agents/bot/users/alice/MEMORY.md")
    (real / "not_yet").symlink_to(".")  # the dangling link now leads to the root
    await assert_nothing_of_alice_through(view, "later")
    assert alices_bytes(real) == before


async def test_project_links_work_and_no_link_leads_into_a_runtime_area(tmp_path: Path) -> None:
    real, given = build_workspace(tmp_path)
    (real / "mine").symlink_to("agents/bot/users/bob/memory")
    (real / "up").symlink_to(".")
    (real / "docs").symlink_to("notes")
    (real / "notes" / "rel").symlink_to("shared.md")
    view = bobs_view(given, "local")
    await view.edit("docs/shared.md", "team", "our")
    assert (real / "notes/shared.md").read_text() == "our notes\n"
    assert await view.read_text("up/notes/rel") == "our notes\n"
    await view.write_text("up/docs/new.md", "via two links\n")
    assert (real / "notes/new.md").read_text() == "via two links\n"
    assert [m.path for m in await view.grep("two links", "docs")] == ["docs/new.md"]
    # not even into Bob's own scope: his own files are reached by their real paths
    await view.write_text("agents/bot/users/bob/memory/today.md", "- Bob's note\n")
    for path in ("mine/today.md", "up/agents/bot/users/bob/memory/today.md"):
        with pytest.raises(REFUSED):
            await view.read(path)
        with pytest.raises(REFUSED):
            await view.write_text(path, PLANT)
    with pytest.raises(REFUSED):
        await view.ls("mine")
    with pytest.raises(REFUSED):  # instruction files stay read-only through a link
        await view.write_text("up/AGENTS.md", PLANT)
    assert not (real / "AGENTS.md").exists()
    assert (real / "agents/bot/users/bob/memory/today.md").read_text() == "- Bob's note\n"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_harness_itself_follows_no_link_of_a_callers_own_scope(
    tmp_path: Path, backend: str
) -> None:
    """Links a command made in Bob's own folders would turn the harness's own reads and
    appends of Bob's memory (which go to the workspace, not through a view) into Alice's."""
    real, given = build_workspace(tmp_path)
    own = real / "agents/bot/users/bob"
    (own / "memory" / "2026-01-02.md").symlink_to("../../alice/MEMORY.md")
    (own / "memory" / "up").symlink_to("../../../../..")
    (own / "plans").symlink_to("../alice/plans")
    (own / "MEMORY.md").symlink_to("../alice/MEMORY.md")
    before = alices_bytes(real)
    root = given if backend == "local" else FsspecFilesystem(f"file://{given}")
    fs = Workspace(root).fs
    for path in (
        "agents/bot/users/bob/memory/2026-01-02.md",
        "agents/bot/users/bob/memory/up/agents/bot/users/alice/MEMORY.md",
        "agents/bot/users/bob/memory/up/notes/shared.md",
        "agents/bot/users/bob/plans/PLAN.md",
        "agents/bot/users/bob/MEMORY.md",
    ):
        with pytest.raises(PathNotInViewError, match="symbolic link inside"):
            await fs.read(path)
        with pytest.raises(PathNotInViewError):
            await fs.append_text(path, PLANT)
        with pytest.raises(PathNotInViewError):
            await fs.edit(path, SECRET, PLANT)
    assert await fs.grep(SECRET, "agents/bot/users/bob") == []
    assert [i.path for i in await fs.glob("**/*", "agents/bot/users/bob")] == []
    assert alices_bytes(real) == before
    # a project link into the runtime data is not followed by the harness either
    (real / "notes" / "peek").symlink_to("../agents/bot/users/alice")
    with pytest.raises(PathNotInViewError, match="leads into"):
        await fs.read("notes/peek/MEMORY.md")
    assert SECRET in await fs.read_text("agents/bot/users/alice/MEMORY.md")  # real paths work


def _swapper(real: Path, stop: threading.Event, swaps: list[int]) -> None:
    """Flip ``x`` between a link to a decoy directory and a link to the root, atomically."""
    for target in ("decoy", "."):
        with contextlib.suppress(FileNotFoundError):
            (real / f"x_{target}").unlink()
        os.symlink(target, real / f"x_{target}")
    while not stop.is_set():
        for target in ("decoy", "."):
            os.link(real / f"x_{target}", real / "x_new", follow_symlinks=False)
            os.replace(real / "x_new", real / "x")
            swaps[0] += 1


async def test_a_link_swapped_between_check_and_open_leaks_nothing(tmp_path: Path) -> None:
    real, given = build_workspace(tmp_path)
    decoy = real / "decoy" / "agents" / "bot" / "users" / "alice"
    decoy.mkdir(parents=True)
    (decoy / "MEMORY.md").write_text("decoy\n")
    (real / "x").symlink_to("decoy")
    before = alices_bytes(real)
    view = bobs_view(given, "local")
    stop, swaps = threading.Event(), [0]
    thread = threading.Thread(target=_swapper, args=(real, stop, swaps), daemon=True)
    thread.start()
    seen: set[str] = set()
    target = "x/agents/bot/users/alice/MEMORY.md"
    try:
        tries = 0
        # until both outcomes were seen many times (the swapper really raced the reads)
        while tries < 200 or swaps[0] < 200 or len(seen) < 2:
            tries += 1
            assert tries < 200_000, (swaps, seen)
            try:
                text = await view.read_text(target)
                seen.add("read")
            except REFUSED:
                seen.add("refused")
                text = ""
            assert SECRET not in text
            with contextlib.suppress(*REFUSED):
                await view.write_text(target, "decoy\n")  # lands in the decoy or nowhere
            found = await view.grep(SECRET, "x")
            assert found == [], found
    finally:
        stop.set()
        thread.join()
    assert alices_bytes(real) == before


async def test_a_memory_workspace_has_no_links_to_follow() -> None:
    fs = MemoryFilesystem()
    await fs.write_text("agents/bot/users/alice/MEMORY.md", SECRET)
    view = Workspace(fs).view("bot", "bob", "s1")
    assert view.inner is fs  # no link check to add: nothing there can be a link
    with pytest.raises(REFUSED):
        await view.read("agents/bot/users/alice/MEMORY.md")


async def test_fsspec_local_links_cannot_leave_the_workspace(tmp_path: Path) -> None:
    real, given = build_workspace(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "host-secret.txt").write_text("host-only-0c41")
    (real / "out").symlink_to(outside)
    (real / "out_file").symlink_to(outside / "host-secret.txt")
    for fs in (FsspecFilesystem(f"file://{given}"), FsspecFilesystem(f"local://{real}")):
        for path in ("out/host-secret.txt", "out_file"):
            with pytest.raises(PathOutsideWorkspaceError):
                await fs.read(path)
            with pytest.raises(PathOutsideWorkspaceError):
                await fs.write_text(path, PLANT)
        assert await fs.grep("host-only") == []
    assert (outside / "host-secret.txt").read_text() == "host-only-0c41"
