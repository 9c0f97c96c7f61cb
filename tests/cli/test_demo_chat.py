"""``harnessed chat --demo``: the scripted demo model in a conversation, no key needed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.chat_app import harnessed_process
from tests.cli.test_chat import Output


def test_chat_demo_fixes_the_bug_without_a_key(tmp_path: Path) -> None:
    proc = harnessed_process(
        tmp_path,
        "chat",
        "--demo",
        "--workspace",
        str(tmp_path / "demo"),
        env={"OPENAI_API_KEY": "", "COLUMNS": "200", "XDG_DATA_HOME": str(tmp_path / "data")},
        stdin=subprocess.PIPE,
    )
    out = Output(proc)
    assert proc.stdin is not None

    def send(line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    try:
        out.wait_for("/help lists the commands")
        send("hello")
        out.wait_for("scripted demo model")
        send("please fix the bug")
        for asked in (1, 2):  # the tests are run twice, and each run asks first
            out.wait_until(lambda text, n=asked: text.count("Allow execute?") >= n)
            send("y")
        out.wait_for("after the fix the tests pass")
        send("/quit")
        assert proc.wait(120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "/ len(values)" in (tmp_path / "demo" / "calc.py").read_text()
