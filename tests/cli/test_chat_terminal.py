"""``harnessed chat`` in a real terminal (a pty): line editing with the arrow keys, history
kept across runs, multi-line input and paste, slash commands with completion, Ctrl-C that
interrupts a turn and asks before leaving, and a reopened session's history."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect

from harnessed.cli.chat_history import YOU

ROOT = Path(__file__).resolve().parents[2]
UP, LEFT, ENTER, CTRL_C, ALT_ENTER = "\x1b[A", "\x1b[D", "\r", "\x03", "\x1b\r"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


def spawn(workspace: Path, home: Path, *args: str) -> pexpect.spawn:
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
        "CHAT_TEST_WORKSPACE": str(workspace),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "TERM": "xterm",
        "PROMPT_TOOLKIT_NO_CPR": "1",  # the pty answers no cursor-position requests
    }
    child = pexpect.spawn(
        sys.executable,
        ["-m", "harnessed.cli", "chat", "--agent", "tests.cli.chat_app:make_agent", *args],
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=120,  # only against a hang: every step waits for what it expects
        dimensions=(40, 120),
    )
    return child


def leave(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus if child.exitstatus is not None else -child.signalstatus


def test_editing_history_commands_and_interrupts(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    child = spawn(workspace, home, "--session", "talk")
    try:
        child.expect("/help lists the commands")
        # Left moves the cursor: X lands before the last letter (no escape code is sent)
        child.send("abc" + LEFT + "X" + ENTER)
        child.expect("You said: abXc")
        child.expect("completed ·")
        # Up recalls the line; the recalled line is edited and sent again
        child.send(UP)
        child.expect("abXc")
        child.send("!" + ENTER)
        child.expect("You said: abXc!")
        child.expect("completed ·")
        # Alt-Enter starts a new line; a paste keeps its newlines and sends nothing by itself
        child.send("line one" + ALT_ENTER + "line two" + ENTER)
        child.expect("You said: line one")
        child.expect("line two")
        child.expect("completed ·")
        child.send(PASTE_START + "pasted A\npasted B" + PASTE_END)
        child.expect("pasted B")
        child.send(ENTER)
        child.expect("You said: pasted A")
        child.expect("completed ·")
        # slash commands complete with Tab, and /help lists them all
        child.send("/he")
        child.expect("this list")  # the completion menu
        child.send("\t")
        child.expect("/help")
        child.send(ENTER)
        child.expect("/compact")
        child.send("/cost" + ENTER)
        child.expect(r"in / \d+ out tokens over \d+ model request")
        child.send("/model" + ENTER)
        child.expect("model: scripted")
        child.send("/sessions" + ENTER)
        child.expect("/resume SESSION opens one")
        # Ctrl-C interrupts the running turn and the program goes on; /resume continues
        child.send("slow please" + ENTER)
        child.expect("slow_job")
        child.send("/steer wrap it up" + ENTER)
        child.expect("next step")
        child.send(CTRL_C)
        child.expect("interrupted: /resume continues")
        child.send("/resume" + ENTER)
        child.expect("You said: wrap it up")
        child.expect("completed ·")
        # Ctrl-C when idle asks first: "n" stays, then Ctrl-C twice leaves
        child.send(CTRL_C)
        child.expect("Leave the chat")
        child.send("n" + ENTER)
        child.expect("staying")
        child.send(CTRL_C)
        child.expect("Leave the chat")
        child.send(CTRL_C)
        assert leave(child) == 0
    finally:
        if child.isalive():
            child.terminate(force=True)

    # a new process: the session's history is printed, and Up recalls the last run's lines
    again = spawn(workspace, home, "--session", "talk")
    try:
        again.expect("/help lists the commands")
        again.expect("earlier in this session")
        again.expect("You said: abXc!")
        again.expect(YOU)
        again.send(UP)
        again.expect("/resume")  # the last line sent in the first run
        again.send(CTRL_C)  # clears the recalled line instead of asking to leave
        again.send("/quit" + ENTER)
        assert leave(again) == 0
    finally:
        if again.isalive():
            again.terminate(force=True)
    history = (home / "data" / "harnessed" / "chat_history").read_text()
    assert "abXc!" in history and "/steer wrap it up" in history
