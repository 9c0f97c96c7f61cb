"""`harnessed run` in a real terminal (a pty): approvals typed by the user, and Ctrl-C."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pexpect
import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ScriptedModel
from tests.cli.test_run import chunk, tool_call_reply
from tests.support.http_server import LocalServer, Reply

SRC = str(Path(__file__).resolve().parents[2] / "src")


def text_reply(text: str, pause: float = 0.0) -> Reply:
    return Reply(
        sse=[chunk({"role": "assistant", "content": text}), chunk({}, "stop"), "data: [DONE]\n\n"],
        pause=pause,
    )


def spawn(server: LocalServer, workspace: Path, *args: str) -> pexpect.spawn:
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "OPENAI_API_KEY": "sk-local",
        "COLUMNS": "100",
        "TERM": "xterm",
    }
    env.pop("OPENAI_BASE_URL", None)
    return pexpect.spawn(
        sys.executable,
        [
            "-m",
            "harnessed.cli",
            "run",
            *args,
            "--model",
            "openai:gpt-test",
            "--base-url",
            server.url + "/v1",
            "--workspace",
            str(workspace),
        ],
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 100),
    )


def finish(child: pexpect.spawn) -> tuple[str, int]:
    rest = child.read()
    child.close()
    return rest, child.exitstatus if child.exitstatus is not None else -child.signalstatus


@pytest.fixture
def server():
    srv = LocalServer().start()
    yield srv
    srv.stop()


def test_decline_with_a_typed_reason_reaches_the_model(server, tmp_path):
    server.queue(tool_call_reply("echo RAN > ran.txt"), text_reply("Understood."))
    child = spawn(server, tmp_path, "make a file", "--session", "s1")
    child.expect("Allow execute")
    child.sendline("n")
    child.expect("Why not")
    child.sendline("use write_file instead")
    output, code = finish(child)
    assert code == 0, output
    assert "Understood." in output
    assert not (tmp_path / "ran.txt").exists()
    result = server.requests[1].json()["messages"][-1]
    assert result["role"] == "tool" and "use write_file instead" in result["content"]


def test_always_allow_holds_for_the_rest_of_the_session(server, tmp_path):
    server.queue(
        tool_call_reply("echo one > one.txt"),
        tool_call_reply("echo two > two.txt"),
        text_reply("Both written."),
        tool_call_reply("echo three > three.txt"),
        text_reply("Third written."),
    )
    child = spawn(server, tmp_path, "write two files", "--session", "s1")
    child.expect("Allow execute")
    child.sendline("a")
    child.expect("always, for this session")  # the second call is not asked about
    output, code = finish(child)
    assert code == 0, output
    assert "Allow execute" not in output
    assert (tmp_path / "one.txt").exists() and (tmp_path / "two.txt").exists()
    # a later run of the same session remembers the answer
    child = spawn(server, tmp_path, "one more", "--session", "s1")
    output, code = finish(child)
    assert code == 0, output
    assert "Allow execute" not in output and (tmp_path / "three.txt").exists()


def test_ctrl_c_saves_the_turn_and_says_interrupted(server, tmp_path):
    server.queue(text_reply("Working on it", pause=30))
    child = spawn(server, tmp_path, "a long task", "--session", "s1")
    child.expect("Working on it")
    child.sendintr()
    output, code = finish(child)
    assert code == 130, output
    assert "interrupted" in output
    assert "Traceback" not in output
    assert "--session s1" in output

    async def saved() -> tuple[list[tuple[str, object]], list[str]]:
        agent = HarnessAgent("harnessed", ScriptedModel([]), workspace=tmp_path)
        try:
            ctx = RuntimeContext("default", "s1")
            records = [(r.type, r.payload.get("status")) for r in await agent.session_log(ctx)]
            return records, [m.text for m in await agent.session_messages(ctx)]
        finally:
            await agent.close()

    records, messages = asyncio.run(saved())
    assert "a long task" in messages  # the user's turn is in the session
    assert any("Working on it" in m for m in messages)  # and so is the reply streamed so far
    assert records[-1] == ("run/end", "interrupted")


def test_no_one_to_answer_exits_4_waiting_for_approval(server, tmp_path):
    server.queue(tool_call_reply("echo RAN > ran.txt"))
    child = spawn(server, tmp_path, "make a file", "--session", "s1")
    child.expect("Allow execute")
    child.sendeof()
    output, code = finish(child)
    assert code == 4, output
    assert "waiting for approval" in output
    assert not (tmp_path / "ran.txt").exists()


def test_ctrl_c_while_being_asked_ends_at_once(server, tmp_path):
    server.queue(tool_call_reply("echo RAN > ran.txt"))
    child = spawn(server, tmp_path, "make a file", "--session", "s1")
    child.expect("Allow execute")
    child.sendintr()
    output, code = finish(child)
    assert code == 130, output
    assert "interrupted" in output and "Traceback" not in output
    assert not (tmp_path / "ran.txt").exists()


def test_always_allow_survives_ctrl_c(server, tmp_path):
    server.queue(tool_call_reply("echo one > one.txt"), text_reply("Still going", pause=30))
    child = spawn(server, tmp_path, "write a file", "--session", "s1")
    child.expect("Allow execute")
    child.sendline("a")
    child.expect("Still going")
    child.sendintr()
    output, code = finish(child)
    assert code == 130, output
    assert (tmp_path / "one.txt").exists()

    server.queue(tool_call_reply("echo two > two.txt"), text_reply("Written."))
    child = spawn(server, tmp_path, "one more", "--session", "s1")
    output, code = finish(child)
    assert code == 0, output
    assert "Allow execute" not in output and (tmp_path / "two.txt").exists()
