"""``harnessed chat``: a conversation with an agent in the terminal, on one session.

Replies stream as they are written. While a turn runs, Ctrl-C interrupts it (its progress is
saved) instead of quitting; ``/steer TEXT`` gives the running turn a message, ``/resume``
continues an interrupted turn, ``/quit`` (or Ctrl-D) leaves. A message typed while a turn runs
is queued as the next turn.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import threading
from typing import Any

from rich.console import Console
from rich.markup import escape

from harnessed.cli.loading import load_object
from harnessed.cli.render import EventPrinter
from harnessed.events import AgentEndEvent, ConfirmationRequestEvent
from harnessed.questions.answers import QuestionAnswerError, is_question
from harnessed.runtime import RuntimeContext
from harnessed.sessions import AgentSession, NothingToResumeError, SessionIdleError, Turn

__all__ = ["ChatTerminal", "register"]

_HELP = "/steer TEXT guides the running turn · /resume continues · /quit leaves · Ctrl-C stops"


def register(sub: Any) -> None:
    chat = sub.add_parser("chat", help="talk with an agent in the terminal (one session)")
    chat.add_argument(
        "--agent",
        default=None,
        metavar="MODULE:OBJECT",
        help="your application's HarnessAgent (default: one built from --model)",
    )
    chat.add_argument(
        "--model",
        default=os.environ.get("HARNESSED_MODEL", "openai:gpt-4.1-mini"),
        help="provider:model when no --agent is given (default: $HARNESSED_MODEL or %(default)s)",
    )
    chat.add_argument("--workspace", default=".", help="workspace without --agent (default: .)")
    chat.add_argument("--system", default="", help="system prompt without --agent")
    chat.add_argument("--session", default="chat", help="session id (default: chat)")
    chat.add_argument("--user", default="default", help="user id (default: default)")
    chat.add_argument(
        "--permission-mode",
        choices=("default", "accept_edits", "explore", "bypass", "dont_ask"),
        default="default",
        help="without --agent: ask before tools change things (default: default)",
    )
    chat.add_argument("--no-thinking", action="store_true", help="hide streamed thinking")
    chat.set_defaults(handler=_chat)


class ChatTerminal:
    """The conversation loop: reads lines, submits, steers, prints the turns' events."""

    def __init__(self, session: AgentSession, console: Console, *, show_thinking: bool = True):
        self.session = session
        self.console = console
        self.show_thinking = show_thinking
        self.asking: ConfirmationRequestEvent | None = None
        self._printing: asyncio.Task[None] | None = None

    def on_interrupt(self) -> bool:
        """Ctrl-C: interrupt the running turn (``True``), or ``False`` when idle (quit)."""
        if self.session.interrupt() is None:
            return False
        self.console.print("[yellow]⏹ interrupting the turn…[/]")
        return True

    async def run(self, lines: asyncio.Queue[str | None]) -> int:
        session = self.session
        self.console.print(
            f"[bold]{escape(session.agent.name)}[/] · session [cyan]{escape(session.session_id)}"
            f"[/] · user {escape(session.user_id)}\n[dim]{_HELP}[/]"
        )
        while True:
            line = await lines.get()
            if line is None:
                break
            text = line.strip()
            if self.asking is not None and not text.startswith("/"):
                await self._answer(text)
                continue
            if not text:
                continue
            if text == "/quit":
                break
            if text == "/steer" or text.startswith("/steer "):
                self._steer(text[6:].strip())
            elif text == "/resume":
                try:
                    self._follow(await session.resume())
                except NothingToResumeError as exc:
                    self.console.print(f"[dim]{escape(str(exc))}[/]")
            elif text.startswith("/"):
                self.console.print(f"[red]unknown command {escape(text.split()[0])}[/] · {_HELP}")
            else:
                self._follow(await session.submit(text))
        if session.interrupt() is not None:
            self.console.print("[yellow]stopping the running turn (resume it later)…[/]")
        if self._printing is not None:
            await self._printing
        return 0

    def _steer(self, text: str) -> None:
        if not text:
            self.console.print("[red]usage: /steer TEXT[/]")
            return
        try:
            self.session.steer(text)
        except SessionIdleError:
            self.console.print("[dim]no turn is running; send it as a message instead[/]")
            return
        self.console.print("[dim]↪ the agent will read this at its next step[/]")

    async def _answer(self, text: str) -> None:
        request, self.asking = self.asking, None
        assert request is not None
        if is_question(request.details):
            await self._answer_question(request, text)
            return
        approved = text.lower() in ("y", "yes")
        try:
            await self.session.respond(request.request_id, approved)
        except Exception as exc:  # answered elsewhere, or the turn already ended
            self.console.print(f"[red]{escape(str(exc))}[/]")

    async def _answer_question(self, request: ConfirmationRequestEvent, text: str) -> None:
        """A number picks a choice; a question with a schema takes JSON; empty declines."""
        if not text:
            with contextlib.suppress(Exception):
                await self.session.respond(request.request_id, False)
            self.console.print("[dim]declined to answer[/]")
            return
        choices = request.details.get("choices") or []
        answer: Any = text
        if text.isdigit() and 1 <= int(text) <= len(choices):
            answer = choices[int(text) - 1]
        elif request.details.get("schema"):
            try:
                answer = json.loads(text)
            except json.JSONDecodeError:
                answer = text  # a string schema takes the text as it is
        try:
            await self.session.respond(request.request_id, True, answer=answer)
        except QuestionAnswerError as exc:
            self.asking = request  # ask again
            self.console.print(f"[red]{escape(str(exc))}[/] · try again (empty declines)")
        except Exception as exc:  # answered elsewhere, or the turn already ended
            self.console.print(f"[red]{escape(str(exc))}[/]")

    def _follow(self, turn: Turn) -> None:
        previous = self._printing
        self._printing = asyncio.create_task(self._print(turn, previous))

    async def _print(self, turn: Turn, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await previous
        printer = EventPrinter(self.console, show_thinking=self.show_thinking)
        try:
            async for event in turn.events():
                printer.handle(event)
                if isinstance(event, ConfirmationRequestEvent):
                    printer.close()
                    self.asking = event
                    self.console.print(_prompt(event))
                elif isinstance(event, AgentEndEvent) and event.status == "interrupted":
                    self.console.print("[yellow]interrupted: /resume continues[/]")
            with contextlib.suppress(Exception):
                await turn.result()
        finally:
            printer.close()
            self.asking = None


def _prompt(event: ConfirmationRequestEvent) -> str:
    if not is_question(event.details):
        return f"[bold]Allow {escape(event.call.name)}?[/] ({escape(event.reason)}) [y/N]"
    lines = [f"[bold]{escape(str(event.details.get('question')))}[/]"]
    choices = event.details.get("choices") or []
    lines.extend(f"  {i}. {escape(str(c))}" for i, c in enumerate(choices, 1))
    schema = event.details.get("schema")
    if schema:
        lines.append(f"[dim]answer as JSON: {escape(json.dumps(schema, ensure_ascii=False))}[/]")
    lines.append("[dim]your answer (a number picks a choice; empty declines):[/]")
    return "\n".join(lines)


def _read_lines(loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None]) -> None:
    """Read stdin lines in a thread. Raw ``os.read`` (no buffered reader) lets the program
    exit while this thread still waits for input."""
    pending = b""
    while True:
        try:
            chunk = os.read(0, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            if pending:
                loop.call_soon_threadsafe(lines.put_nowait, pending.decode(errors="replace"))
            loop.call_soon_threadsafe(lines.put_nowait, None)
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            loop.call_soon_threadsafe(lines.put_nowait, line.decode(errors="replace"))


def _build_agent(args: argparse.Namespace) -> Any:
    from harnessed.agent import HarnessAgent

    if args.agent:
        agent = load_object(args.agent)
        if not isinstance(agent, HarnessAgent):
            raise ValueError(f"--agent must name a HarnessAgent, got {agent!r}")
        return agent
    return HarnessAgent(
        "harnessed",
        args.model,
        sys_prompt=args.system,
        workspace=args.workspace,
        permission_mode=args.permission_mode,
    )


async def _main(args: argparse.Namespace, console: Console) -> int:
    agent = _build_agent(args)
    session = agent.session(RuntimeContext(args.user, args.session))
    terminal = ChatTerminal(session, console, show_thinking=not args.no_thinking)
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str | None] = asyncio.Queue()

    def interrupted() -> None:
        if not terminal.on_interrupt():
            lines.put_nowait(None)

    loop.add_signal_handler(signal.SIGINT, interrupted)
    threading.Thread(target=_read_lines, args=(loop, lines), daemon=True).start()
    try:
        return await terminal.run(lines)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await agent.close()


def _chat(args: argparse.Namespace, console: Console) -> int:
    try:
        return asyncio.run(_main(args, console))
    except (ValueError, TypeError, ImportError) as exc:
        console.print(f"[red]cannot start the chat:[/] {exc}")
        return 2
