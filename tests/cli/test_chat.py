"""``harnessed chat`` in a real process: streamed replies, /steer, Ctrl-C interrupts the turn
(the program goes on), /resume continues it, /quit leaves."""

from __future__ import annotations

import asyncio
import io
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from harnessed import HarnessAgent, RuntimeContext
from harnessed.cli.chat import ChatTerminal
from harnessed.log import RecordType
from harnessed.models import ModelRequest, ScriptedResponse
from harnessed.models.scripted import ScriptedModel
from harnessed.sessions import AgentSession
from tests.cli.chat_app import harnessed_process

ROOT = Path(__file__).resolve().parents[2]


class Output:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.text = ""
        self._proc = proc
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self.text += line

    def wait_for(self, needle: str, timeout: float = 120) -> None:
        self.wait_until(lambda text: needle in text, timeout, needle)

    def wait_until(
        self, done: Callable[[str], bool], timeout: float = 120, what: str = "condition"
    ) -> None:
        # a deadline only against a hang: on a loaded machine start-up alone can take 20 s
        deadline = time.monotonic() + timeout
        while not done(self.text):
            if time.monotonic() > deadline:
                raise AssertionError(f"{what!r} not met by output:\n{self.text}")
            time.sleep(0.02)


def test_chat_in_the_terminal(tmp_path: Path) -> None:
    proc = harnessed_process(
        tmp_path,
        "chat",
        "--agent",
        "tests.cli.chat_app:make_agent",
        "--session",
        "talk",
        env={"COLUMNS": "200"},
        stdin=subprocess.PIPE,
    )
    out = Output(proc)
    assert proc.stdin is not None

    def send(line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    try:
        out.wait_for("/steer TEXT")
        # before any turn: after one, a steer can come while its last events are being shown
        # and the turn is still ending, which makes it a turn of its own (by design)
        send("/steer too early")
        out.wait_for("no turn is running")
        send("hello")
        out.wait_for("You said: hello")
        out.wait_for("completed ·")
        send("deploy staging")
        out.wait_for("Allow deploy?")
        out.wait_for("[y/N]")  # the brackets are printed, not read as markup
        send("y")
        out.wait_for("Finished after: deployed to staging")
        send("slow please")
        out.wait_for("slow_job")
        send("/steer wrap it up")
        out.wait_for("next step")
        proc.send_signal(signal.SIGINT)
        out.wait_for("interrupted: /resume continues")
        assert proc.poll() is None  # Ctrl-C stopped the turn, not the program
        send("/resume")  # the steering message waits in the history for the resumed turn
        out.wait_for("You said: wrap it up")
        send("/quit")
        assert proc.wait(120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    agent = HarnessAgent("chatty", ScriptedModel(), workspace=tmp_path, memory=False)
    ctx = RuntimeContext("default", "talk")
    messages = asyncio.run(agent.session_messages(ctx))
    texts = [m.text for m in messages]
    assert "hello" in texts and "wrap it up" in texts
    assert any("Interrupted" in t for t in texts)
    ends = asyncio.run(agent.session_log(ctx, types=[RecordType.RUN_END]))
    assert [e.payload["status"] for e in ends].count("interrupted") == 1


async def _wait_for(out: io.StringIO, needle: str) -> None:
    while needle not in out.getvalue():  # the test's own timeout guards against a hang
        await asyncio.sleep(0.01)


async def test_the_reply_to_a_late_steer_is_shown(tmp_path: Path) -> None:
    """A steer that comes while the last model request of a turn runs is too late for it: it
    becomes a turn of its own, which the user did not send but must see answered."""
    sessions: list[AgentSession] = []

    def respond(request: ModelRequest) -> ScriptedResponse:
        last = request.messages[-1].text
        if last == "late please":
            sessions[0].steer("and one more thing")  # arrives as the turn is ending
            return ScriptedResponse(text="first reply")
        return ScriptedResponse(text=f"You said: {last}")

    agent = HarnessAgent(
        "chatty", ScriptedModel(responder=respond), workspace=tmp_path, memory=False, shell=False
    )
    session = agent.session(RuntimeContext("default", "late"))
    sessions.append(session)
    out = io.StringIO()
    terminal = ChatTerminal(agent, session, Console(file=out, width=120), echo=True)
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    chat = asyncio.create_task(terminal.run(lines))
    try:
        lines.put_nowait("late please")
        await asyncio.wait_for(_wait_for(out, "You said: and one more thing"), 60)
        assert out.getvalue().index("first reply") < out.getvalue().index("one more thing")
        lines.put_nowait("/quit")
        assert await asyncio.wait_for(chat, 60) == 0
    finally:
        chat.cancel()
        await agent.close()


def test_chat_answers_a_question_the_model_asks(tmp_path: Path) -> None:
    proc = harnessed_process(
        tmp_path,
        "chat",
        "--agent",
        "tests.cli.chat_app:make_agent",
        "--session",
        "quiz",
        env={"COLUMNS": "200"},
        stdin=subprocess.PIPE,
    )
    out = Output(proc)
    assert proc.stdin is not None

    def send(line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    try:
        out.wait_for("/steer TEXT")
        send("ask me")
        out.wait_for("2. blue")
        send("green")  # not a choice: asked again
        out.wait_for("try again")
        send("2")
        out.wait_for("Finished after: The user answered: blue")
        send("/quit")
        assert proc.wait(120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_sub_agents_request_says_which_sub_agent_asks() -> None:
    from harnessed.cli.approvals import TerminalApprover
    from harnessed.cli.chat import _prompt
    from harnessed.events import ConfirmationRequestEvent
    from harnessed.messages import ToolUseBlock

    asked = ConfirmationRequestEvent(
        request_id="perm_1",
        call=ToolUseBlock("c1", "deploy", {}),
        reason="changes things",
        source="worker:1/helper:2",
        run_id="run_1",
        session_id="s",
    )
    printed = io.StringIO()
    console = Console(file=printed, width=100)
    console.print(_prompt(asked))
    assert printed.getvalue().splitlines() == [
        "asked by sub-agent worker:1/helper:2",
        "Allow deploy? (changes things) [y/N]",
    ]
    printed.truncate(0)
    printed.seek(0)
    approver = TerminalApprover(console, read=lambda _: "y")
    answer = asyncio.run(approver.answer(asked))
    assert answer is not None and answer.approved
    assert printed.getvalue().splitlines() == ["asked by sub-agent worker:1/helper:2"]
