"""How ``harnessed run`` shows a sub-agent's events: one indented line each under the parent's
output. A sub-agent's streamed text is shown once its message is complete, so children working
in parallel never interleave in the middle of a line."""

from __future__ import annotations

import json

from rich.markup import escape

from harnessed.events import (
    AgentEndEvent,
    AgentStartEvent,
    CustomEvent,
    ErrorEvent,
    Event,
    ModelCallEndEvent,
    ToolResultEvent,
)

__all__ = ["child_lines", "completed_line"]


def _short(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} chars)"


def child_lines(event: Event) -> list[str]:
    """The lines (rich markup) for a sub-agent's event; none for deltas and the like."""
    assert event.source is not None
    pad = "[dim]" + "  │ " * (event.source.count("/") + 1) + "[/]"
    who = f"[blue]{escape(event.source.rsplit('/', 1)[-1])}[/]"
    lines: list[str] = []
    if isinstance(event, AgentStartEvent):
        lines.append(
            f"[blue]▸ sub-agent {escape(event.source)}[/] [dim]session "
            f"{escape(event.session_id)}[/]"
        )
    elif isinstance(event, ModelCallEndEvent):
        text = event.message.text.strip()
        if text:
            lines.append(f"{who} {escape(_short(text, 240))}")
        for call in event.message.tool_uses:
            args = _short(json.dumps(dict(call.input), ensure_ascii=False), 120)
            lines.append(f"{who} [yellow]⚙ {escape(call.name)}[/] [dim]{escape(args)}[/]")
    elif isinstance(event, ToolResultEvent):
        style, mark = ("red", "✗") if event.result.is_error else ("green", "✓")
        first = (event.result.content.strip().splitlines() or ["(no output)"])[0]
        lines.append(
            f"{who} [{style}]{mark} {escape(event.result.name or 'tool')}[/] "
            f"[dim]{escape(_short(first, 120))}[/]"
        )
    elif isinstance(event, ErrorEvent):
        lines.append(f"{who} [red]{escape(event.error_type)}: {escape(event.message)}[/]")
    elif isinstance(event, CustomEvent) and event.name == "subagent_needs_approval":
        lines.append(
            f"{who} [yellow]? {escape(str(event.data.get('tool')))} needs approval, which a "
            "sub-agent cannot ask for: its task stops here[/]"
        )
    elif isinstance(event, AgentEndEvent):
        lines.append(
            f"[blue]◂ {escape(event.source)} {escape(event.status)}[/] "
            f"[dim]({event.iterations} request(s))[/]"
        )
    elif isinstance(event, CustomEvent) and event.name == "subagent_completed":
        lines.append(completed_line(event))
    return [pad + line for line in lines]


def completed_line(event: CustomEvent) -> str:
    """A task of a sub-agent ended: its status and the tokens it used."""
    data = event.data
    return (
        f"[blue]↳ sub-agent {escape(str(data.get('agent_key')))} "
        f"{escape(str(data.get('status')))}[/] [dim]{int(data.get('input_tokens', 0)):,} in / "
        f"{int(data.get('output_tokens', 0)):,} out tokens[/]"
    )
