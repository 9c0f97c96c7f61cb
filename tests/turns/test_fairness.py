"""Turns waiting for a session are served first come, first served, across processes: two
processes calling one session in a loop take turns, neither passed over while it waits."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from harnessed import HarnessAgent
from tests.turns.fair_worker import CTX

ROOT = Path(__file__).resolve().parents[2]
CALLS = 6


async def run_two_workers(where: str, events: Path) -> None:
    """Workers ``a`` and ``b`` each make ``CALLS`` calls on one session, at the same time."""
    events.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    procs = []
    for label, other in (("a", "b"), ("b", "a")):
        args = [where, label, other, str(CALLS), str(events)]
        procs.append(
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.turns.fair_worker",
                *args,
                cwd=ROOT,
                env=env,
                stderr=asyncio.subprocess.PIPE,
            )
        )
    for proc in procs:
        _, err = await asyncio.wait_for(proc.communicate(), 300)
        assert proc.returncode == 0, err.decode()


async def turn_order(agent: HarnessAgent) -> list[str]:
    """Whose turn each run of the session was, in the order they ran (from the log)."""
    messages = await agent.session_messages(CTX)
    inputs = [m.text for m in messages if m.role == "user"]
    assert sorted(inputs) == sorted(f"{w}-{i}" for w in "ab" for i in range(CALLS))
    return [text.split("-")[0] for text in inputs]


def assert_served_in_turn(order: list[str], events: Path) -> None:
    """Every turn ended with the other worker waiting (the workers see to that), so under
    first come, first served the next turn is the other worker's until one has finished."""
    for i in range(1, len(order)):
        other = "b" if order[i] == "a" else "a"
        if order[i] == order[i - 1] and other in order[i:]:
            raise AssertionError(
                f"turn {i}: {order[i]!r} ran twice in a row while {other!r} waited: "
                + "".join(order)
            )
    for worker in "ab":  # both really waited for the session
        assert "wait" in (events / worker).read_text().split()


async def test_two_processes_calling_one_session_take_turns(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    await run_two_workers(str(workspace), tmp_path / "events")
    from harnessed.models import ScriptedModel

    agent = HarnessAgent("shared", ScriptedModel(), workspace=workspace, memory=False)
    assert_served_in_turn(await turn_order(agent), tmp_path / "events")
