"""Crash consistency (BEHAVIOUR.md §8): whatever the log holds after ``kill -9`` is the history.

A worker process (``tests/support/crash_worker.py``) runs an agent and is killed at random
points; the test then reopens the workspace the way a restarted application would.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from harnessed import CompactionConfig, HarnessAgent, Msg, RuntimeContext
from harnessed.context import tool_pair_problems
from harnessed.log import RecordType
from harnessed.log.view import INTERRUPTED_TEXT
from harnessed.models import ModelRequest, ScriptedModel

CTX = RuntimeContext("u", "crash")
ROOT = Path(__file__).resolve().parents[2]


def start(workspace: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.crash_worker", str(workspace), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def log_file(workspace: Path) -> Path:
    return workspace / "agents/crash/sessions/u/crash.log.jsonl"


def wait_for(predicate: object, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if proc.poll() is not None:
            raise AssertionError(f"worker exited early: {proc.stderr.read()!r}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("worker made no progress")
        time.sleep(0.01)


def kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def one_result_per_call(history: list[Msg]) -> None:
    assert tool_pair_problems(history) == []
    calls = [c.id for m in history for c in m.tool_uses]
    results = [r.tool_use_id for m in history for r in m.tool_results]
    assert sorted(calls) == sorted(results) and len(set(results)) == len(results)


def reopened(workspace: Path, model: ScriptedModel) -> HarnessAgent:
    return HarnessAgent(
        "crash",
        model,
        workspace=workspace,
        shell=False,
        memory=False,
        compaction=CompactionConfig(trigger_messages=10**9),  # history == log, message for message
    )


async def test_kill_9_at_random_points_then_reopen(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    inputs_seen = 0
    for round_no in range(6):
        proc = start(tmp_path, "multi", str(round_no))
        size = log_file(tmp_path).stat().st_size if log_file(tmp_path).exists() else 0
        wait_for(
            lambda size=size: (
                log_file(tmp_path).exists()  # type: ignore[misc]
                and log_file(tmp_path).stat().st_size > size
            ),
            proc,
        )
        time.sleep(rng.uniform(0.0, 0.6))
        kill(proc)

        agent = reopened(tmp_path, ScriptedModel(["carrying on"]))
        # the history is exactly the log's messages (no compaction here)
        logged = await agent.session_messages(CTX)
        state = await agent.load_state(CTX)
        assert [m.id for m in state.history] == [m.id for m in logged]
        inputs = [m for m in logged if m.role == "user"]
        assert len(inputs) > inputs_seen  # every input ever given is there, failed calls' too
        inputs_seen = len(inputs)
        # the session continues: an unanswered call gets its "interrupted" result first
        reply = await agent.call("are you still there?", CTX)
        assert reply.text == "carrying on"
        after = await agent.load_state(CTX)
        one_result_per_call(after.history)
        logged = await agent.session_messages(CTX)
        assert [m.id for m in after.history] == [m.id for m in logged]
        await agent.close()
    failed = [m for m in logged if m.role == "user" and "FAIL" in m.text]
    assert failed, "no failing call happened; the seed should produce some"


async def test_an_interrupted_first_tool_call_can_be_resumed(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    proc = start(tmp_path, "first-tool", str(marker))
    wait_for(marker.exists, proc)
    kill(proc)

    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> str:
        seen.append(request)
        return "the job was interrupted; I will check before running it again"

    agent = reopened(tmp_path, ScriptedModel(responder=answer))
    reply = await agent.call(None, CTX)  # continue: no new input
    assert reply.text.startswith("the job was interrupted")
    history = (await agent.load_state(CTX)).history
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[0].text == "run the long job"
    result = history[2].tool_results[0]
    assert result.is_error and result.content == INTERRUPTED_TEXT
    assert result.tool_use_id == history[1].tool_uses[0].id
    sent = [m for m in seen[0].messages if m.role == "tool"]
    assert sent and INTERRUPTED_TEXT in sent[0].text
    # recorded in the log, with an error record naming the call
    errors = await agent.session_log(CTX, types=[RecordType.ERROR])
    assert errors[-1].payload["error_type"] == "ProcessInterrupted"
    assert errors[-1].payload["call_ids"] == [result.tool_use_id]
    logged = await agent.session_messages(CTX)
    assert [m.id for m in logged] == [m.id for m in history]
    await agent.close()


async def test_a_second_process_appending_is_seen_without_a_full_reload(tmp_path: Path) -> None:
    agent = reopened(tmp_path, ScriptedModel(["one", "three"]))
    await agent.call("first", CTX)
    reads: list[int] = []
    log = agent.conversation.log
    original = log.read

    async def spy(key, *, after_seq=0, types=None, limit=None):  # type: ignore[no-untyped-def]
        reads.append(after_seq)
        return await original(key, after_seq=after_seq, types=types, limit=limit)

    log.read = spy  # type: ignore[method-assign]
    known = agent.conversation._entries[next(iter(agent.conversation._entries))].view.through
    proc = start(tmp_path, "once", "second")
    assert proc.wait(timeout=60) == 0, proc.stderr.read()  # type: ignore[union-attr]

    await agent.call("third", CTX)
    texts = [m.text for m in (await agent.load_state(CTX)).history]
    assert texts == ["first", "one", "second", "noted by the second process", "third", "three"]
    assert reads and reads[0] == known > 0  # only what was appended after what it knew
    assert 0 not in reads
    await agent.close()
