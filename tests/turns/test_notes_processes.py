"""Steering and interrupting a turn that runs in another process (file turn gate)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from harnessed import HarnessAgent
from harnessed.log import RecordType
from harnessed.models import ScriptedModel
from harnessed.sessions import SessionIdleError
from tests.turns.steer_worker import CTX

ROOT = Path(__file__).resolve().parents[2]


class Worker:
    """``tests.turns.steer_worker`` in a process of its own, its output read line by line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, where: str) -> Worker:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.turns.steer_worker", where,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        return cls(proc)

    async def line(self) -> str:
        assert self.proc.stdout is not None
        raw = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        if not raw:
            assert self.proc.stderr is not None
            raise AssertionError((await self.proc.stderr.read()).decode())
        return raw.decode().strip()

    async def finish(self) -> list[str]:
        lines = []
        while (line := await self.line()) != "done":
            lines.append(line)
        assert await asyncio.wait_for(self.proc.wait(), 30) == 0
        return lines

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()


async def steer_and_interrupt_from_here(worker: Worker, agent: HarnessAgent) -> None:
    """The shared scenario: this process steers the worker's turn, sees the worker take the
    message at its next step, interrupts it, and checks what the log and state say."""
    session = agent.session(CTX)
    assert await worker.line() == "started"
    assert session.running is None  # the turn runs in the other process
    sent = await session.send_steer("turn left at the lights")
    assert sent.elsewhere and sent.turn_id is None and sent.message_id
    assert await worker.line() == f"steered {sent.message_id}"
    stopped = await session.send_interrupt()
    assert stopped is not None and stopped.elsewhere and stopped.message_id is None
    assert await worker.finish() == ["asked 1", "interrupted"]

    messages = await agent.session_messages(CTX)
    steering = [m for m in messages if m.id == sent.message_id]
    assert len(steering) == 1 and steering[0].text == "turn left at the lights"
    assert steering[0].metadata.get("steer") is True
    state = await agent.load_state(CTX)
    assert [m.id for m in state.history] == [m.id for m in messages]
    ends = await agent.session_log(CTX, types=[RecordType.RUN_END])
    assert [e.payload["status"] for e in ends] == ["interrupted"]
    # nothing runs now: nowhere to steer
    with pytest.raises(SessionIdleError, match="no turn is running"):
        await session.send_steer("anyone?")
    assert await session.send_interrupt() is None


async def test_a_turn_in_another_process_is_steered_and_interrupted(tmp_path: Path) -> None:
    worker = await Worker.start(str(tmp_path))
    agent = HarnessAgent("shared", ScriptedModel(), workspace=tmp_path, memory=False)
    try:
        await steer_and_interrupt_from_here(worker, agent)
    finally:
        worker.kill()
        await agent.close()


async def test_blank_steering_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    agent = HarnessAgent("shared", ScriptedModel(), workspace=tmp_path, memory=False)
    with pytest.raises(ValueError, match="non-blank"):
        await agent.session(CTX).send_steer("   ")
