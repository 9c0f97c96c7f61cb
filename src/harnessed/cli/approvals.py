"""Answering confirmation requests in the terminal: yes, always (for this session), or no with
a reason the model is told.

The question is read on a daemon thread, so Ctrl-C while the user is being asked ends the
command at once instead of waiting for a line that will never come.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape

from harnessed.events import ConfirmationRequestEvent
from harnessed.permissions.answers import QuestionAnswerError
from harnessed.runtime import RuntimeContext


class Responder(Protocol):
    async def respond(
        self,
        ctx: RuntimeContext | None,
        request_id: str,
        approved: bool,
        *,
        feedback: str | None = None,
        answer: Any = ...,
    ) -> None: ...


__all__ = ["Answer", "TerminalApprover", "ask_line"]


def ask_line(prompt: str) -> str | None:
    """One line typed by the user, ``None`` at the end of input. Blocking."""
    try:
        return input(prompt)
    except EOFError:
        return None


Reader = Callable[[str], "str | None"]


async def _in_daemon_thread(read: Reader, prompt: str) -> str | None:
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str | None] = loop.create_future()

    def work() -> None:
        try:
            line = read(prompt)
        except BaseException as exc:  # delivered to the waiting coroutine
            loop.call_soon_threadsafe(_settle, answer, None, exc)
        else:
            loop.call_soon_threadsafe(_settle, answer, line, None)

    threading.Thread(target=work, name="harnessed-ask", daemon=True).start()
    return await answer


def _settle(
    future: asyncio.Future[str | None], line: str | None, error: BaseException | None
) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(line)


@dataclass(frozen=True)
class Answer:
    approved: bool
    always: bool = False
    reason: str | None = None


class TerminalApprover:
    """Asks the user about each confirmation request; remembers "always" per tool."""

    def __init__(self, console: Console, read: Reader | None = None) -> None:
        self.console = console
        self.read: Reader = read or ask_line
        self.always: set[str] = set()
        """Tools the user allowed for the rest of this session."""

    async def question(
        self, agent: Responder, ctx: RuntimeContext, event: ConfirmationRequestEvent
    ) -> bool:
        """Ask the model's question in the terminal and give the answer (a number picks a
        choice, JSON for a schema, an empty line declines); ``False`` when input has ended."""
        details = event.details
        choices = list(details.get("choices") or [])
        self._source(event)
        self.console.print(f"[bold]? {escape(str(details.get('question')))}[/]")
        for i, choice in enumerate(choices, 1):
            self.console.print(f"  {i}. {escape(str(choice))}")
        while True:
            line = await _in_daemon_thread(self.read, "Your answer (Enter: decline): ")
            if line is None:
                return False
            text = line.strip()
            if not text:
                await agent.respond(ctx, event.request_id, False)
                return True
            value: Any = text
            if text.isdigit() and 1 <= int(text) <= len(choices):
                value = choices[int(text) - 1]
            elif details.get("schema"):
                with contextlib.suppress(json.JSONDecodeError):
                    value = json.loads(text)
            try:
                await agent.respond(ctx, event.request_id, True, answer=value)
                return True
            except QuestionAnswerError as exc:
                self.console.print(f"[yellow]{escape(str(exc))}[/]")

    def _source(self, event: ConfirmationRequestEvent) -> None:
        if event.source is not None:  # a sub-agent's request, forwarded to this session
            self.console.print(f"[blue]asked by sub-agent {escape(event.source)}[/]")

    async def answer(self, event: ConfirmationRequestEvent) -> Answer | None:
        """The user's answer; ``None`` when input has ended (no one can answer)."""
        name = event.call.name
        if name in self.always:
            self.console.print(f"[dim]  allowed: {escape(name)} (always, for this session)[/]")
            return Answer(True, always=True)
        self._source(event)
        question = f"Allow {name} ({event.reason})? [y]es / [a]lways this session / [N]o: "
        while True:
            line = await _in_daemon_thread(self.read, question)
            if line is None:
                return None
            reply = line.strip().lower()
            if reply in ("y", "yes"):
                return Answer(True)
            if reply in ("a", "always"):
                self.always.add(name)
                return Answer(True, always=True)
            if reply in ("", "n", "no"):
                break
            self.console.print("[yellow]answer y, a or n[/]")
        why = await _in_daemon_thread(self.read, "Why not? (the model is told; Enter: no reason) ")
        return Answer(False, reason=(why or "").strip() or None)
