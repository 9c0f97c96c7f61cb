"""The event renderer writing to a file or a pipe (not a terminal)."""

from __future__ import annotations

import io

from rich.console import Console

from harnessed.cli.render import EventPrinter
from harnessed.events import TextDeltaEvent, ToolCallEvent
from harnessed.messages import ToolUseBlock


def test_streamed_text_ends_its_line_before_the_next_output_when_piped() -> None:
    out = io.StringIO()
    renderer = EventPrinter(Console(file=out, force_terminal=False, width=80))
    base = {"run_id": "r", "session_id": "s"}
    renderer.handle(TextDeltaEvent(model_call_id="m", text="Fixing it.", **base))
    call = ToolUseBlock("c1", "edit_file", {"path": "calc.py"})
    renderer.handle(ToolCallEvent(model_call_id="m", call=call, **base))
    renderer.close()
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    assert "Fixing it." in lines
    assert any(line.startswith("⚙ edit_file") for line in lines)
