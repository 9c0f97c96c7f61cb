"""Temporary files left by a writer that crashed are removed; a live writer's are not."""

from __future__ import annotations

import os
import time
from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.workspace import LocalFilesystem, atomic
from harnessed.workspace.atomic import STALE_AFTER, remove_stale_temp_files


def _leftover(directory: Path, name: str, age: float) -> Path:
    path = directory / name
    path.write_text("half a file")
    old = time.time() - age
    os.utime(path, (old, old))
    return path


def test_old_leftovers_go_and_fresh_ones_stay(tmp_path: Path) -> None:
    stale = _leftover(tmp_path, ".notes.md.k2j3h4.tmp", STALE_AFTER + 60)
    fresh = _leftover(tmp_path, ".notes.md.zz9.tmp", 5)
    other = _leftover(tmp_path, "keep.tmp", STALE_AFTER + 60)  # not one of ours
    assert remove_stale_temp_files(tmp_path) == 1
    assert not stale.exists() and fresh.exists() and other.exists()


async def test_the_first_write_into_a_directory_cleans_it(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    stale = _leftover(tmp_path / "docs", ".a.md.x1.tmp", STALE_AFTER * 2)
    fs = LocalFilesystem(tmp_path)
    await fs.write_text("docs/b.md", "hello")
    assert not stale.exists()
    assert (tmp_path / "docs/b.md").read_text() == "hello"


async def test_state_files_of_a_crashed_save_are_cleaned(tmp_path: Path) -> None:
    ctx = RuntimeContext("u", "s")

    # the state file is written when the structured state changes (the history is the log's):
    # each call here rewrites the task list
    def todos(text: str) -> ScriptedResponse:
        todo = ScriptedToolCall("todo_write", {"todos": [{"id": "1", "content": text}]})
        return ScriptedResponse(tool_calls=[todo])

    model = ScriptedModel([todos("first"), "one", todos("second"), "two"])
    agent = HarnessAgent("a", model, workspace=tmp_path, enable_task_list=True)
    try:
        await agent.call("hi", ctx)
        [state_file] = [p for p in tmp_path.rglob("*.json") if "state" in str(p)]
        stale = _leftover(state_file.parent, f".{state_file.name}.abc.tmp", STALE_AFTER * 2)
        atomic._checked.discard(state_file.parent)  # as in a new process after the crash
        await agent.call("again", ctx)
    finally:
        await agent.close()
    assert not stale.exists()
