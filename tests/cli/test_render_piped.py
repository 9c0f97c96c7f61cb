"""The event renderer writing to a file or a pipe (not a terminal)."""

from __future__ import annotations

import io

from rich.console import Console

from harnessed.cli.render import EventPrinter
from harnessed.events import CustomEvent, TextDeltaEvent, ToolCallEvent
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


def test_sandbox_lifecycle_events_are_one_line_each() -> None:
    out = io.StringIO()
    renderer = EventPrinter(Console(file=out, force_terminal=False, width=100))
    base = {"run_id": "r", "session_id": "s"}
    for name, data in [
        ("sandbox_acquire", {"mode": "restore", "backend": "bubblewrap", "duration_ms": 41.6}),
        ("sandbox_acquire", {"mode": "live", "backend": "remote", "duration_ms": 0.01}),
        ("sandbox_snapshot", {"status": "completed", "backend": "bubblewrap", "bytes": 20480}),
        ("sandbox_snapshot", {"status": "failed", "backend": "remote", "error": "disk full"}),
    ]:
        renderer.handle(CustomEvent(name=name, data=data, **base))
    renderer.close()
    assert out.getvalue().splitlines() == [
        "▣ bubblewrap sandbox restored from its snapshot (42 ms)",
        "▣ remote sandbox reused (0 ms)",
        "▣ bubblewrap sandbox snapshot saved (20,480 bytes, 0 ms)",
        "▣ remote sandbox snapshot failed: disk full",
    ]
