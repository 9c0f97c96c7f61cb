"""Rendering of agent events in a terminal with rich: streamed text, tools, a live status line."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.status import Status

from harnessed.events import (
    AgentEndEvent,
    AgentStartEvent,
    ConfirmationRequestEvent,
    CustomEvent,
    ErrorEvent,
    Event,
    MaxItersEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
)

__all__ = ["EventPrinter"]

_PREVIEW = 300


def _short(text: str, limit: int = _PREVIEW) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} chars)"


class EventPrinter:
    """Prints one run's events; a spinner shows what the agent is waiting for."""

    def __init__(self, console: Console | None = None, *, show_thinking: bool = True) -> None:
        self.console = console or Console()
        self.show_thinking = show_thinking
        self._status: Status | None = None
        self._in_text = False
        self._running_tools: dict[str, str] = {}
        self.input_tokens = 0
        self.output_tokens = 0

    # -------------------------------------------------------------- status
    def _set_status(self, text: str | None) -> None:
        if text is None:
            if self._status is not None:
                self._status.stop()
                self._status = None
            return
        if self._status is None:
            self._status = self.console.status(text, spinner="dots")
            self._status.start()
        else:
            self._status.update(text)

    def _end_text(self) -> None:
        if self._in_text:
            self.console.print()
            self._in_text = False

    def close(self) -> None:
        self._set_status(None)
        self._end_text()

    # --------------------------------------------------------------- events
    def handle(self, event: Event) -> None:
        if isinstance(event, AgentStartEvent):
            self.console.rule(
                f"[bold]{escape(event.agent)}[/] · session {escape(event.session_id)}", style="dim"
            )
        elif isinstance(event, ModelCallStartEvent):
            self._set_status(
                f"[cyan]{escape(event.model)}[/] is thinking (step {event.iteration})…"
            )
        elif isinstance(event, TextDeltaEvent):
            self._set_status(None)
            self._in_text = True
            self.console.print(event.text, end="", markup=False, highlight=False)
        elif isinstance(event, ThinkingDeltaEvent):
            if self.show_thinking:
                self._set_status(None)
                self._in_text = True
                self.console.print(event.thinking, end="", style="dim italic", markup=False)
        elif isinstance(event, ToolCallEvent):
            self._set_status(None)
            self._end_text()
            args = json.dumps(dict(event.call.input), ensure_ascii=False)
            self.console.print(
                f"[yellow]⚙ {escape(event.call.name)}[/] [dim]{escape(_short(args, 160))}[/]"
            )
            self._running_tools[event.call.id] = event.call.name
        elif isinstance(event, ModelCallEndEvent):
            self._end_text()
            if event.usage is not None:
                self.input_tokens += event.usage.input_tokens
                self.output_tokens += event.usage.output_tokens
            if self._running_tools:
                names = ", ".join(sorted(set(self._running_tools.values())))
                self._set_status(f"[yellow]running {escape(names)}[/]…")
            else:
                self._set_status(None)
        elif isinstance(event, ToolResultEvent):
            self._running_tools.pop(event.result.tool_use_id, None)
            style = "red" if event.result.is_error else "green"
            mark = "✗" if event.result.is_error else "✓"
            name = escape(event.result.name or "tool")
            self._print_above_status(
                f"  [{style}]{mark} {name}[/] [dim]({event.duration_ms:.0f} ms)[/]\n"
                f"[dim]{escape(_indented(event.result.content))}[/]"
            )
            if not self._running_tools:
                self._set_status(None)
        elif isinstance(event, CustomEvent) and event.name == "context_build":
            self._print_above_status(_context_line(event.data))
        elif isinstance(event, CustomEvent):
            self._print_above_status(
                f"[magenta]• {escape(event.name)}[/] [dim]{_data(event.data)}[/]"
            )
        elif isinstance(event, ConfirmationRequestEvent):
            self._set_status(None)
            self._end_text()
            args = json.dumps(dict(event.call.input), ensure_ascii=False)
            self.console.print(
                f"[bold yellow]? approval needed:[/] {escape(event.call.name)} "
                f"[dim]{escape(_short(args, 200))}[/] — {escape(event.reason)}"
            )
        elif isinstance(event, MaxItersEvent):
            self._end_text()
            self.console.print(f"[bold red]stopped: reached max_iters={event.max_iters}[/]")
        elif isinstance(event, ErrorEvent):
            self.close()
            self.console.print(f"[bold red]{escape(event.error_type)}:[/] {escape(event.message)}")
        elif isinstance(event, AgentEndEvent):
            self.close()
            self.console.rule(
                f"[dim]{event.status} · {event.iterations} model request(s) · "
                f"{self.input_tokens:,} in / {self.output_tokens:,} out tokens[/]",
                style="dim",
            )

    def _print_above_status(self, markup: str) -> None:
        self._end_text()
        self.console.print(markup)


def _context_line(data: Mapping[str, Any]) -> str:
    manifest = data.get("context_manifest") or {}
    used = manifest.get("estimated_input_tokens", -1)
    limit = manifest.get("input_limit", -1)
    parts = [f"context {used:,}/{limit:,} tokens" if used >= 0 else "context not counted"]
    transforms = manifest.get("transforms") or []
    if transforms:
        parts.append(", ".join(str(t) for t in transforms[:4]))
    if data.get("status") != "passed":
        parts.append(f"failed: {data.get('error_type')}")
        return f"[red]◆ {escape(' · '.join(parts))}[/]"
    return f"[dim]◆ {escape(' · '.join(parts))}[/]"


def _indented(text: str, max_lines: int = 6) -> str:
    lines = [line[:160] for line in text.strip("\n").rstrip().splitlines()] or ["(no output)"]
    shown = lines[:max_lines]
    if len(lines) > max_lines:
        shown.append(f"… {len(lines) - max_lines} more line(s)")
    return "\n".join(f"    {line}" for line in shown)


def _data(data: Any) -> str:
    return escape(_short(json.dumps(data, ensure_ascii=False, default=str), 200))
