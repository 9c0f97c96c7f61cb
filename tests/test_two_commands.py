"""The README's "Two commands" are two commands: the demo, and exactly what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def test_the_two_commands_are_the_demo_and_the_ci_command() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", section("Two commands"), re.S)
    commands = [[line for line in block.splitlines() if line.strip()] for block in blocks]
    assert commands[0] == ["pip install -e . && harnessed demo"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert commands[1] == [ci]
    assert len(commands) == 2
