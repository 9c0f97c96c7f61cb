"""Two processes, one session: turns never overlap and nothing is lost; a crashed holder loses
its lease (BEHAVIOUR §13)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnessed import RuntimeContext
from harnessed.log import RecordType
from tests.turns.worker import main as run_worker

ROOT = Path(__file__).resolve().parents[2]
CTX = RuntimeContext("u", "one")


def spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.turns.worker", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill_while_working(workspace: Path, label: str) -> float:
    """Start a worker whose turn hangs in a tool holding a 1 s lease, kill -9 it; returns
    when it died."""
    proc = spawn(str(workspace), label, "1", "1.0", "hang")
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        return time.monotonic()
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize(
    "modes", [("turns", "turns"), ("turns", "call"), ("call", "call")], ids="-".join
)
async def test_two_processes_never_overlap_and_lose_nothing(
    tmp_path: Path, modes: tuple[str, str]
) -> None:
    """Session turns and plain ``agent.call`` calls hold the same turn lease: in any mix, one
    process's run never starts inside another's."""
    turns = 6
    procs = [
        spawn(str(tmp_path), label, str(turns), "30", *(["call"] if mode == "call" else []))
        for label, mode in zip("ab", modes, strict=True)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip().endswith("done")

    from harnessed import HarnessAgent
    from harnessed.models import ScriptedModel

    agent = HarnessAgent("shared", ScriptedModel(), workspace=tmp_path, memory=False)
    log = await agent.session_log(CTX)
    open_run: str | None = None
    runs = 0
    for record in log:  # a run starts only after the previous one ended
        if record.type == RecordType.RUN_START:
            assert open_run is None, f"run {record.run_id} started inside run {open_run}"
            open_run = record.run_id
            runs += 1
        elif record.type == RecordType.RUN_END:
            assert record.run_id == open_run and record.payload["status"] == "completed"
            open_run = None
    assert runs == 2 * turns and open_run is None
    messages = await agent.session_messages(CTX)
    inputs = sorted(m.text for m in messages if m.role == "user")
    assert inputs == sorted(f"{p}-{i}" for p in "ab" for i in range(turns))
    replies = [m.text for m in messages if m.role == "assistant" and not m.tool_uses]
    assert sorted(replies) == sorted(f"done: handled {t}" for t in inputs)
    state = await agent.load_state(CTX)
    assert [m.id for m in state.history] == [m.id for m in messages]


async def test_a_crashed_holder_loses_its_lease(tmp_path: Path) -> None:
    killed = kill_while_working(tmp_path, "crash")
    await run_worker(str(tmp_path), "after", 1, 1.0, False)
    # the lease was still held when the holder died; it was taken once it expired
    assert time.monotonic() - killed < 10
    from harnessed import HarnessAgent
    from harnessed.models import ScriptedModel

    agent = HarnessAgent("shared", ScriptedModel(), workspace=tmp_path, memory=False)
    ends = await agent.session_log(CTX, types=[RecordType.RUN_END])
    assert ends[-1].payload["status"] == "completed"


async def test_a_turn_interrupted_in_one_process_is_resumed_in_another(tmp_path: Path) -> None:
    proc = spawn(str(tmp_path), "first", "1", "30", "interrupt")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.split() == ["started", "interrupted", "done"]

    from harnessed import HarnessAgent
    from harnessed.models import ScriptedModel

    model = ScriptedModel(["carrying on after the restart"])
    agent = HarnessAgent("shared", model, workspace=tmp_path, memory=False)
    end = await (await agent.session(CTX).resume()).result()
    assert end.status == "completed" and end.reply.text == "carrying on after the restart"
    seen = [m.text for m in model.requests[0].messages]
    assert "first-0" in seen[-3] and "Interrupted" in seen[-1]
    messages = await agent.session_messages(CTX)
    state = await agent.load_state(CTX)
    assert [m.id for m in state.history] == [m.id for m in messages]


async def test_a_turn_a_killed_process_left_unfinished_can_be_resumed(tmp_path: Path) -> None:
    from harnessed import HarnessAgent
    from harnessed.models import ScriptedModel

    first = HarnessAgent("shared", ScriptedModel(["earlier turn"]), workspace=tmp_path)
    await (await first.session(CTX).submit("an earlier message")).result()
    kill_while_working(tmp_path, "killed")
    model = ScriptedModel(["resumed"])
    agent = HarnessAgent("shared", model, workspace=tmp_path, memory=False)
    resumed = await agent.session(CTX).resume()  # waits for the dead holder's lease to expire
    assert (await resumed.result()).status == "completed"
    # the killed turn's input and its unanswered tool call (answered "interrupted") are there
    seen = [m.text for m in model.requests[0].messages]
    assert "killed-0" in seen and "interrupted" in seen[-1].lower()
