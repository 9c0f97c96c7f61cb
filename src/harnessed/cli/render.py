"""Rendering of agent events in a terminal with rich: streamed text, tools, a live status line.

Replies are rendered as Markdown while they stream; tool output is shown as it is (no syntax
highlighting guessed into file contents); a command's non-zero exit is a red ✗; retries, todo
lists, plan changes and compactions get lines of their own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.status import Status
from rich.text import Text

from harnessed.cli.render_children import child_lines, completed_line
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
    UsageLimitEvent,
)

__all__ = ["EventPrinter"]

_PREVIEW = 300
_EXIT = re.compile(r"\[(exit code (-?\d+)|killed by [^\]]+|timed out[^\]]*)\]\s*$")
_RENDERED_TOOLS = frozenset({"todo_write"})
"""Tools whose arguments are shown by the event they cause (the todo list), not as JSON."""
_TODO_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☑"}


def _short(text: str, limit: int = _PREVIEW) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} chars)"


class EventPrinter:
    """Prints one run's events; a spinner shows what the agent is waiting for.

    With ``on_status`` the printer draws nothing live (for a terminal where a prompt owns the
    bottom line): what the agent waits for goes to ``on_status`` as plain text (``None`` when
    nothing), and replies are printed as they stream, without Markdown rendering.
    """

    def __init__(
        self,
        console: Console | None = None,
        *,
        show_thinking: bool = True,
        on_status: Callable[[str | None], None] | None = None,
    ) -> None:
        self.console = console or Console()
        self.show_thinking = show_thinking
        self._on_status = on_status
        self._streaming = False
        self._status: Status | None = None
        self._live: Live | None = None
        self._text: list[str] = []
        self._in_text = False
        self._running_tools: dict[str, str] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        self.estimated = False
        """Some of the counts are estimates: a server reported no usage for a request."""
        self._call_input = 0  # the context's own estimate of the request being made
        self._call_output: list[str] = []  # what the request streamed (thinking, text, calls)

    # -------------------------------------------------------------- status
    def _set_status(self, text: str | None) -> None:
        if self._on_status is not None:
            self._on_status(None if text is None else Text.from_markup(text).plain)
            return
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
        if self._streaming:
            if not "".join(self._text).endswith("\n"):
                self.console.print()
            self._streaming = False
            self._text = []
        if self._live is not None:
            self._live.update(Markdown("".join(self._text)), refresh=True)
            self._live.stop()
            if not self.console.is_terminal:
                # off a terminal Live prints its last frame without ending the line
                self.console.print()
            self._live = None
            self._text = []
        if self._in_text:
            self.console.print()
            self._in_text = False

    def _stream_text(self, text: str) -> None:
        """Streamed reply text, rendered as Markdown as it grows."""
        if self._in_text:  # thinking was being printed
            self.console.print()
            self._in_text = False
        self._text.append(text)
        if self._on_status is not None:
            self._streaming = True
            self.console.print(text, end="", markup=False, highlight=False)
            return
        markdown = Markdown("".join(self._text))
        if self._live is None:
            self._live = Live(
                markdown, console=self.console, refresh_per_second=8, vertical_overflow="visible"
            )
            self._live.start()
        else:
            self._live.update(markdown)

    def close(self) -> None:
        self._set_status(None)
        self._end_text()

    # --------------------------------------------------------------- events
    def handle(self, event: Event) -> None:
        """Print ``event`` (each kind has its handler below; a sub-agent's are indented)."""
        if event.source is not None:
            self._on_child(event)
            return
        for kind in type(event).__mro__:
            handler = _HANDLERS.get(kind)
            if handler is not None:
                handler(self, event)
                return

    def _on_child(self, event: Event) -> None:
        """A sub-agent's work, indented under the parent's."""
        if isinstance(event, ModelCallEndEvent) and event.usage is not None:
            self.input_tokens += event.usage.input_tokens  # a child's: counted when told
            self.output_tokens += event.usage.output_tokens
        for line in child_lines(event):
            self._print_above_status(line)

    def _on_agent_start(self, event: AgentStartEvent) -> None:
        self.console.rule(
            f"[bold]{escape(event.agent)}[/] · session {escape(event.session_id)}", style="dim"
        )

    def _on_model_call_start(self, event: ModelCallStartEvent) -> None:
        self._set_status(f"[cyan]{escape(event.model)}[/] is thinking (step {event.iteration})…")

    def _on_text(self, event: TextDeltaEvent) -> None:
        self._call_output.append(event.text)
        self._set_status(None)
        self._stream_text(event.text)

    def _on_thinking(self, event: ThinkingDeltaEvent) -> None:
        self._call_output.append(event.thinking)
        if not self.show_thinking:
            return
        self._set_status(None)
        if self._live is not None or self._streaming:
            self._end_text()
        self._in_text = True
        self.console.print(
            event.thinking, end="", style="dim italic", markup=False, highlight=False
        )

    def _on_tool_call(self, event: ToolCallEvent) -> None:
        self._set_status(None)
        self._end_text()
        args = json.dumps(dict(event.call.input), ensure_ascii=False)
        self._call_output.append(event.call.name + args)
        shown = "" if event.call.name in _RENDERED_TOOLS else _short(args, 160)
        self.console.print(
            f"[yellow]⚙ {escape(event.call.name)}[/] [dim]{escape(shown)}[/]",
            highlight=False,
        )
        self._running_tools[event.call.id] = event.call.name

    def _on_model_call_end(self, event: ModelCallEndEvent) -> None:
        self._end_text()
        self._count_usage(event)
        if self._running_tools:
            names = ", ".join(sorted(set(self._running_tools.values())))
            self._set_status(f"[yellow]running {escape(names)}[/]…")
        else:
            self._set_status(None)

    def _on_tool_result(self, event: ToolResultEvent) -> None:
        self._running_tools.pop(event.result.tool_use_id, None)
        ending = _ending(event.result.content)
        failed = event.result.is_error or ending is not None
        style = "red" if failed else "green"
        mark = "✗" if failed else "✓"
        name = escape(event.result.name or "tool")
        note = f" · {ending}" if ending else ""
        self._print_above_status(
            f"  [{style}]{mark} {name}[/] [dim]({event.duration_ms:.0f} ms{escape(note)})[/]\n"
            f"[dim]{escape(_indented(event.result.content))}[/]"
        )
        if not self._running_tools:
            self._set_status(None)

    def _on_custom(self, event: CustomEvent) -> None:
        if event.name == "context_build":
            manifest = event.data.get("context_manifest") or {}
            self._call_input = max(0, int(manifest.get("estimated_input_tokens", 0) or 0))
            self._print_above_status(_context_line(event.data))
        elif event.name == "subagent_completed":
            self._print_above_status("  " + completed_line(event))
        elif event.name in _CUSTOM:
            _CUSTOM[event.name](self, event.data)
        else:
            self._print_above_status(
                f"[magenta]• {escape(event.name)}[/] [dim]{_data(event.data)}[/]"
            )

    def _on_confirmation_request(self, event: ConfirmationRequestEvent) -> None:
        self._set_status(None)
        self._end_text()
        args = json.dumps(dict(event.call.input), ensure_ascii=False)
        self.console.print(
            f"[bold yellow]? approval needed:[/] {escape(event.call.name)} "
            f"[dim]{escape(_short(args, 200))}[/] — {escape(event.reason)}"
        )

    def _on_max_iters(self, event: MaxItersEvent) -> None:
        self._end_text()
        self.console.print(f"[bold red]stopped: reached max_iters={event.max_iters}[/]")

    def _on_usage_limit(self, event: UsageLimitEvent) -> None:
        self._end_text()
        self.console.print(
            f"[bold red]stopped: {escape(event.scope)} limit {escape(event.limit)} reached "
            f"({event.used:g} of {event.maximum:g})[/]"
        )

    def _on_error(self, event: ErrorEvent) -> None:
        self.close()
        self.console.print(f"[bold red]{escape(event.error_type)}:[/] {escape(event.message)}")

    def _on_agent_end(self, event: AgentEndEvent) -> None:
        self.close()
        reason = event.reply.metadata.get("reason") if event.status == "stopped" else None
        if reason:
            self.console.print(f"[bold yellow]stopped:[/] {escape(str(reason))}")
        self.console.rule(f"[dim]{escape(footer(event, self))}[/]", style="dim")

    def _count_usage(self, event: ModelCallEndEvent) -> None:
        """Add a request's tokens; estimate them when the server reported none."""
        if event.usage is not None:
            self.input_tokens += event.usage.input_tokens
            self.output_tokens += event.usage.output_tokens
        else:
            from harnessed.tokens import default_estimator

            self.estimated = True
            self.input_tokens += self._call_input
            self.output_tokens += default_estimator().count_text("".join(self._call_output))
        self._call_input, self._call_output = 0, []

    def _tokens(self) -> str:
        if not self.estimated:
            return f"{self.input_tokens:,} in / {self.output_tokens:,} out tokens"
        return (
            f"~{self.input_tokens:,} in / ~{self.output_tokens:,} out tokens "
            "(estimated: the server reported no usage)"
        )

    def _print_above_status(self, markup: str) -> None:
        self._end_text()
        self.console.print(markup, highlight=False)

    # ------------------------------------------------------- harness events
    def _retry(self, data: Mapping[str, Any]) -> None:
        status = data.get("status_code")
        what = f"HTTP {status}" if status else "no answer"
        attempt, most = int(data.get("attempt", 0)), int(data.get("max_attempts", 0))
        wait = float(data.get("wait_seconds", 0.0))
        self._print_above_status(
            f"[yellow]↻ {escape(str(data.get('model', 'model')))}: {escape(what)} — "
            f"attempt {attempt} of {most} failed, retrying in {wait:.1f} s[/]\n"
            f"[dim]    {escape(_short(str(data.get('error', '')), 200))}[/]"
        )
        self._set_status(f"[yellow]waiting {wait:.1f} s before attempt {attempt + 1} of {most}[/]…")

    def _todos(self, data: Mapping[str, Any]) -> None:
        if data.get("action") != "todos":
            self._print_above_status(f"[magenta]• task[/] [dim]{_data(data)}[/]")
            return
        lines = ["[bold]todos[/]"]
        for item in data.get("todos") or []:
            status = str(item.get("status", "pending"))
            mark = _TODO_MARKS.get(status, "•")
            style = {"completed": "green", "in_progress": "yellow"}.get(status, "")
            text = escape(str(item.get("content", "")))
            lines.append(f"  [{style}]{mark} {text}[/]" if style else f"  {mark} {text}")
        self._print_above_status("\n".join(lines))

    def _plan(self, data: Mapping[str, Any]) -> None:
        plan = data.get("plan") or {}
        state = "plan mode on" if plan.get("active") else "plan mode off"
        where = f" · {plan['plan_file']}" if plan.get("plan_file") else ""
        self._print_above_status(
            f"[blue]▤ {escape(state)}[/] [dim]({escape(str(data.get('action', '')))}"
            f"{escape(where)})[/]"
        )

    def _compaction(self, data: Mapping[str, Any]) -> None:
        if "status" not in data:  # compaction_start
            self._set_status(
                f"[magenta]summarizing {data.get('summarized_messages', '?')} earlier "
                "message(s)[/]…"
            )
            return
        self._set_status(None)
        if data.get("status") == "failed":
            self._print_above_status(
                f"[red]◆ compaction failed:[/] [dim]{escape(str(data.get('error', '')))}[/]"
            )
        else:
            self._print_above_status(
                f"[magenta]◆ history summarized:[/] [dim]{data.get('messages_before')} → "
                f"{data.get('messages_after')} messages, {data.get('tokens_before'):,} → "
                f"{data.get('tokens_after'):,} tokens[/]"
            )

    def _sandbox(self, data: Mapping[str, Any]) -> None:
        backend = escape(str(data.get("backend", "sandbox")))
        took = float(data.get("duration_ms", 0.0))
        if "mode" in data:  # sandbox_acquire
            how = {"live": "reused", "restore": "restored from its snapshot", "cold": "started"}
            what = how.get(str(data["mode"]), escape(str(data["mode"])))
            self._print_above_status(f"[dim]▣ {backend} sandbox {what} ({took:.0f} ms)[/]")
        elif data.get("status") == "failed":
            error = escape(_short(str(data.get("error", "")), 200))
            self._print_above_status(f"[dim]▣ {backend} sandbox snapshot failed: {error}[/]")
        else:
            size = int(data.get("bytes", 0))
            self._print_above_status(
                f"[dim]▣ {backend} sandbox snapshot saved ({size:,} bytes, {took:.0f} ms)[/]"
            )


_CUSTOM = {
    "model_retry": EventPrinter._retry,
    "task_changed": EventPrinter._todos,
    "plan_changed": EventPrinter._plan,
    "compaction_start": EventPrinter._compaction,
    "compaction_end": EventPrinter._compaction,
    "sandbox_acquire": EventPrinter._sandbox,
    "sandbox_snapshot": EventPrinter._sandbox,
}
_HANDLERS: dict[type, Callable[[EventPrinter, Any], None]] = {
    AgentStartEvent: EventPrinter._on_agent_start,
    ModelCallStartEvent: EventPrinter._on_model_call_start,
    TextDeltaEvent: EventPrinter._on_text,
    ThinkingDeltaEvent: EventPrinter._on_thinking,
    ToolCallEvent: EventPrinter._on_tool_call,
    ModelCallEndEvent: EventPrinter._on_model_call_end,
    ToolResultEvent: EventPrinter._on_tool_result,
    CustomEvent: EventPrinter._on_custom,
    ConfirmationRequestEvent: EventPrinter._on_confirmation_request,
    MaxItersEvent: EventPrinter._on_max_iters,
    UsageLimitEvent: EventPrinter._on_usage_limit,
    ErrorEvent: EventPrinter._on_error,
    AgentEndEvent: EventPrinter._on_agent_end,
}
"""Each kind of event's handler (a subclass of a kind is handled as that kind)."""


def _ending(output: str) -> str | None:
    """How a command ended, when it did not end well: ``exit code 1``, ``killed by ...``."""
    match = _EXIT.search(output)
    if match is None:
        return None
    if match.group(2) is not None and int(match.group(2)) == 0:
        return None
    return match.group(1)


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


def cache_note(read: int, written: int, frame: str) -> str:
    """``frame`` around what the provider's prompt cache served and stored ("" for none)."""
    said = [f"{read:,} cached"] if read else []
    said += [f"{written:,} written to cache"] if written else []
    return frame.format(", ".join(said)) if said else ""


def footer(event: AgentEndEvent, counted: Any) -> str:
    """The line under a finished call: status, requests, tokens (cached ones), cost."""
    usage = event.usage
    if usage is None or getattr(counted, "estimated", False):
        # no usage reported (by an older end event, or by the server): the renderer's count,
        # marked as an estimate where it is one
        return f"{event.status} · {event.iterations} model request(s) · {counted._tokens()}"
    cached = cache_note(usage.cache_read_tokens, usage.cache_write_tokens, ", {}")
    return (
        f"{event.status} · {usage.requests} model request(s) · {usage.input_tokens:,} in"
        f"{cached} / {usage.output_tokens:,} out tokens · {usage.describe_cost()}"
    )
