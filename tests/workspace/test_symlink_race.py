"""A directory swapped for a symlink while the filesystem works: nothing lands outside.

The swapper thread keeps replacing ``d`` with a symlink to a directory outside the workspace
and back again, as an attacker sharing the workspace could. Every write and read goes through
an ``O_NOFOLLOW`` walk, so each either happens inside the workspace or fails cleanly.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from pathlib import Path

from harnessed.workspace import LocalFilesystem, WorkspaceError

WRITES = 10_000


def _swapper(root: Path, outside: Path, stop: threading.Event, swaps: list[int]) -> None:
    real, parked = root / "d", root / "d_parked"
    while not stop.is_set():
        try:
            os.rename(real, parked)
            os.symlink(outside, real)
            swaps[0] += 1
            os.unlink(real)
        except OSError:
            pass
        # a write may have re-created "d" while it was missing: put the parked one back
        if parked.exists():
            with contextlib.suppress(OSError):
                if real.is_symlink():
                    real.unlink()
                elif real.exists():
                    shutil.rmtree(real)
                os.rename(parked, real)


async def test_ten_thousand_writes_during_symlink_swaps_never_land_outside(
    tmp_path: Path,
) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET")
    fs = LocalFilesystem(root)
    (root / "d").mkdir()
    (root / "d" / "secret.txt").write_text("inside")
    stop, swaps = threading.Event(), [0]
    thread = threading.Thread(target=_swapper, args=(root, outside, stop, swaps), daemon=True)
    thread.start()
    written = refused = leaked_reads = 0
    try:
        for i in range(WRITES):
            try:
                await fs.write_text(f"d/f{i % 50}.txt", f"write {i}")
                written += 1
            except (WorkspaceError, OSError):
                refused += 1
            if i % 10 == 0:
                with contextlib.suppress(WorkspaceError, OSError):
                    if b"TOP SECRET" in await fs.read("d/secret.txt"):
                        leaked_reads += 1
    finally:
        stop.set()
        thread.join()
    assert swaps[0] > 100, "the swapper must really have raced the writes"
    assert written > 0 and written + refused == WRITES
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "TOP SECRET"
    assert leaked_reads == 0
