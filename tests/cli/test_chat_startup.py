"""``harnessed chat`` draws its prompt before the agent is built: typing starts at once, and
what is sent meanwhile waits for the agent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect

from harnessed.cli.chat_history import YOU

ROOT = Path(__file__).resolve().parents[2]
ENTER, CTRL_C = "\r", "\x03"


def spawn(tmp_path: Path, release: Path) -> pexpect.spawn:
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
        "CHAT_TEST_WORKSPACE": str(tmp_path),
        "CHAT_TEST_RELEASE": str(release),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "TERM": "xterm",
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }
    agent = "tests.cli.chat_app:make_agent_when_released"
    return pexpect.spawn(
        sys.executable,
        ["-m", "harnessed.cli", "chat", "--agent", agent, "--no-history"],
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=120,  # only against a hang
        dimensions=(40, 120),
    )


def test_the_prompt_comes_before_the_agent_and_a_message_waits_for_it(tmp_path: Path) -> None:
    release = tmp_path / "release"
    child = spawn(tmp_path, release)
    try:
        child.expect(YOU.strip())  # the prompt is up; the agent is blocked until released
        child.send("hello early" + ENTER)
        child.expect("hello early")
        assert "/help lists the commands" not in (child.before or "")  # no banner: no agent
        release.touch()
        child.expect("/help lists the commands")  # the banner, once the agent is ready
        child.expect("You said: hello early")
        child.expect("completed ·")
        child.send("/quit" + ENTER)
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_ctrl_c_while_the_agent_is_built_leaves_quietly(tmp_path: Path) -> None:
    release = tmp_path / "release"
    child = spawn(tmp_path, release)
    try:
        child.expect(YOU.strip())
        child.send(CTRL_C)
        release.touch()  # the build ends; nothing runs on the agent
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
        assert "Traceback" not in (child.before or "")
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_the_chat_module_imports_no_agent_before_the_prompt() -> None:
    code = (
        "import sys\n"
        "import harnessed.cli.chat, harnessed.cli.chat_input, harnessed.cli.chat_commands\n"
        "print(sorted(m for m in sys.modules if m.startswith(('harnessed.agent', "
        "'harnessed.permissions', 'harnessed.models', 'pydantic', 'httpx'))))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
