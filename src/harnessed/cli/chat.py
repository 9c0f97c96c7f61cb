"""``harnessed chat``: a conversation with an agent in the terminal, on one session at a time.

In a terminal the input line is a line editor (:mod:`harnessed.cli.chat_input`): arrow keys,
history kept across runs, multi-line input and paste, completion of slash commands. Replies
stream above it as they are written, the line at the bottom says what the agent is doing.
Every turn of the session is shown, also those the user caused without sending a message (a
``/steer`` that came as a turn ended becomes a turn of its own). While a turn runs, Ctrl-C
interrupts it (its progress is saved; ``/resume`` continues); when idle, Ctrl-C asks before
leaving. A message typed while a turn runs is queued as the next turn. Reopening a session
prints what was said in it. ``/help`` lists the commands.

With input from a pipe (no terminal) lines are read as they come, and the same commands work.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO, cast

from rich.console import Console
from rich.markup import escape

from harnessed.cli.chat_history import YOU, print_history
from harnessed.cli.paths import data_dir

if TYPE_CHECKING:
    from harnessed.agent import HarnessAgent
    from harnessed.cli.render import EventPrinter
    from harnessed.events import ConfirmationRequestEvent, Event
    from harnessed.sessions import AgentSession

__all__ = ["ChatTerminal", "register"]

_HINT = "/help lists the commands · /steer TEXT guides the running turn · Ctrl-C stops it"
_MODES = ("default", "accept_edits", "explore", "bypass", "dont_ask")


def register(sub: Any) -> None:
    chat = sub.add_parser("chat", help="talk with an agent in the terminal (one session)")
    chat.add_argument(
        "--agent",
        default=None,
        metavar="MODULE:OBJECT",
        help="your application's HarnessAgent (default: one built from --model)",
    )
    chat.add_argument(
        "--demo",
        action="store_true",
        help="a scripted model in a throw-away workspace (no API key, no network)",
    )
    chat.add_argument(
        "--model",
        default=None,
        help="provider:model when no --agent is given "
        "(default: harnessed.toml, $HARNESSED_MODEL or openai:gpt-4.1-mini)",
    )
    chat.add_argument(
        "--base-url", default=None, help="the server's URL, e.g. http://localhost:8000/v1"
    )
    chat.add_argument(
        "--workspace",
        default=None,
        help="workspace without --agent, holding its sessions too (default: the current "
        "directory, with sessions and state in the user's data directory)",
    )
    chat.add_argument(
        "--data-dir",
        default=None,
        help="without --agent: where sessions and state go (default: harnessed.toml's "
        "data_dir, else $XDG_DATA_HOME/harnessed/projects/…; inside --workspace when given)",
    )
    chat.add_argument("--system", default="", help="system prompt without --agent")
    chat.add_argument("--session", default="chat", help="session id (default: chat)")
    chat.add_argument("--user", default="default", help="user id (default: default)")
    chat.add_argument("--max-iters", type=int, default=None, help="model requests per turn")
    asks = chat.add_mutually_exclusive_group()
    asks.add_argument(
        "--permission-mode",
        choices=_MODES,
        default=None,
        help="without --agent: which tool calls ask first (default: default)",
    )
    asks.add_argument(
        "--yes", action="store_true", help="run every tool without asking (bypass mode)"
    )
    chat.add_argument(
        "--sandbox",
        choices=("host", "bubblewrap", "none"),
        default=None,
        help="without --agent: where execute runs (default: harnessed.toml, else the default)",
    )
    chat.add_argument("--no-thinking", action="store_true", help="hide streamed thinking")
    chat.add_argument(
        "--no-history", action="store_true", help="keep no input history on disk this time"
    )
    chat.set_defaults(handler=_chat)


class ChatTerminal:
    """The conversation: reads lines, runs commands, submits and steers, and prints every
    event of the session's turns."""

    def __init__(
        self,
        agent: HarnessAgent,
        session: AgentSession,
        console: Console,
        *,
        show_thinking: bool = True,
        model_options: dict[str, Any] | None = None,
        echo: bool = False,
    ) -> None:
        self.agent = agent
        self.session = session
        self.console = console
        self.show_thinking = show_thinking
        self.model_options = dict(model_options or {})
        self.echo = echo
        """Print each line read (input from a pipe: nothing else shows what was sent)."""
        self.asking: ConfirmationRequestEvent | None = None
        self.leaving = False
        self.status: str | None = None
        """What the agent is doing now (shown under the prompt)."""
        self.on_change: Any = None
        """Called when :meth:`prompt_text` or :attr:`status` changed (the prompt redraws)."""
        self.usage: dict[str, list[int]] = {}
        """Per session: input tokens, output tokens, model requests, requests without usage."""
        self.context: dict[str, Any] = {}
        """The last context manifest of the session (tokens used and the window)."""
        self._follower: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ prompt
    def prompt_text(self) -> str:
        if self.asking is not None:
            from harnessed.permissions.answers import is_question

            if is_question(self.asking.details):
                return "your answer: "
            return f"Allow {self.asking.call.name}? [y/N] "
        if self.leaving:
            return "Leave the chat? [y/N] "
        return YOU

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def _set_status(self, text: str | None) -> None:
        self.status = text
        self._changed()

    def on_interrupt(self) -> bool:
        """Ctrl-C: interrupt the running turn; when idle ask before leaving. ``True`` when
        the chat should end (Ctrl-C again while asked)."""
        if self.session.interrupt() is not None:
            self.console.print("[yellow]⏹ interrupting the turn…[/]")
            return False
        if self.leaving:
            return True
        self.leaving = True
        if self.on_change is None:  # no prompt line says it
            self.console.print(
                "Leave the chat? [y/N] (Ctrl-C again leaves)", style="yellow", markup=False
            )
        self._set_status("y leaves · Ctrl-C again leaves · anything else stays")
        return False

    # -------------------------------------------------------------------- loop
    async def run(self, lines: asyncio.Queue[str | None]) -> int:
        from harnessed.cli.chat_commands import run_command

        self._banner()
        await self.open(self.session, first=True)
        try:
            while True:
                line = await lines.get()
                if line is None:
                    break
                text = line.strip()
                if self.echo and text:
                    self.console.print(YOU + text, style="bold", markup=False, highlight=False)
                if self.leaving:
                    self.leaving = False
                    self._set_status(None)
                    if text.lower() in ("y", "yes"):
                        break
                    self.console.print("[dim]staying[/]")
                    continue
                if self.asking is not None and not text.startswith("/"):
                    await self._answer(text)
                    continue
                if not text:
                    continue
                if text.startswith("/"):
                    name, _, rest = text.partition(" ")
                    if not await run_command(self, name, rest.strip()):
                        break
                else:
                    await self.session.submit(text)
        finally:
            await self._stop()
        return 0

    def _banner(self) -> None:
        model = getattr(self.agent.model, "name", "?")
        self.console.print(
            f"[bold]{escape(self.agent.name)}[/] · {escape(str(model))} · session "
            f"[cyan]{escape(self.session.session_id)}[/] · user {escape(self.session.user_id)}"
        )
        self.console.print(_HINT, style="dim", markup=False, highlight=False)

    async def open(self, session: AgentSession, *, first: bool = False) -> None:
        """Follow ``session`` (instead of the one followed so far) and print its history."""
        if self._follower is not None:
            self._follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follower
        if not first and session is not self.session:
            await self.session.close()
        self.session = session
        self.asking = None
        self._follower = asyncio.create_task(self._follow(session))
        await asyncio.sleep(0)  # the follower listens before any turn can start
        print_history(self.console, await session.history())

    async def _stop(self) -> None:
        if self.session.interrupt() is not None:
            self.console.print("[yellow]stopping the running turn (/resume continues it)…[/]")
        with contextlib.suppress(Exception):
            await self.session.close()
        if self._follower is not None:
            self._follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follower
        self._set_status(None)

    async def _answer(self, text: str) -> None:
        from harnessed.permissions.answers import is_question

        request, self.asking = self.asking, None
        self._changed()
        assert request is not None
        if is_question(request.details):
            await self._answer_question(request, text)
            return
        approved = text.lower() in ("y", "yes")
        try:
            await self.session.respond(request.request_id, approved)
        except Exception as exc:  # answered elsewhere, or the turn already ended
            self.console.print(str(exc), style="red", markup=False)

    async def _answer_question(self, request: ConfirmationRequestEvent, text: str) -> None:
        """A number picks a choice; a question with a schema takes JSON; empty declines."""
        from harnessed.permissions.answers import QuestionAnswerError

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

    # ------------------------------------------------------------- following
    def _printer(self) -> EventPrinter:
        from harnessed.cli.render import EventPrinter

        on_status = self._set_status if self.on_change is not None else None
        return EventPrinter(self.console, show_thinking=self.show_thinking, on_status=on_status)

    async def _follow(self, session: AgentSession) -> None:
        from harnessed.events import (
            AgentEndEvent,
            AgentStartEvent,
            ConfirmationRequestEvent,
            CustomEvent,
            ModelCallEndEvent,
        )

        printer: EventPrinter | None = None
        try:
            async for event in session.events():
                if printer is None or (isinstance(event, AgentStartEvent) and not event.source):
                    if printer is not None:
                        printer.close()
                    printer = self._printer()
                printer.handle(event)
                if isinstance(event, ModelCallEndEvent):
                    self._count(session.session_id, event)
                elif isinstance(event, CustomEvent) and event.name == "context_build":
                    self.context = dict(event.data.get("context_manifest") or {})
                elif isinstance(event, ConfirmationRequestEvent):
                    printer.close()
                    self.asking = event
                    self.console.print(_prompt(event))
                    self._changed()
                elif isinstance(event, AgentEndEvent) and event.source is None:
                    printer.close()
                    printer = None
                    self.asking = None
                    if event.status == "interrupted":
                        self.console.print("[yellow]interrupted: /resume continues[/]")
                    self._changed()
        finally:
            if printer is not None:
                printer.close()

    def _count(self, session_id: str, event: Event) -> None:
        counts = self.usage.setdefault(session_id, [0, 0, 0, 0])
        usage = getattr(event, "usage", None)
        counts[2] += 1
        if usage is None:
            counts[3] += 1
            return
        counts[0] += usage.input_tokens
        counts[1] += usage.output_tokens


def _prompt(event: ConfirmationRequestEvent) -> str:
    from harnessed.permissions.answers import is_question

    who = (
        f"[blue]asked by sub-agent {escape(event.source)}[/]\n" if event.source is not None else ""
    )
    if not is_question(event.details):
        return (
            who
            + f"[bold]Allow {escape(event.call.name)}?[/] ({escape(event.reason)}) "
            + escape("[y/N]")
        )
    lines = [f"{who}[bold]{escape(str(event.details.get('question')))}[/]"]
    choices = event.details.get("choices") or []
    lines.extend(f"  {i}. {escape(str(c))}" for i, c in enumerate(choices, 1))
    schema = event.details.get("schema")
    if schema:
        lines.append(f"[dim]answer as JSON: {escape(json.dumps(schema, ensure_ascii=False))}[/]")
    lines.append("[dim]your answer (a number picks a choice; empty declines):[/]")
    return "\n".join(lines)


def _read_pipe(loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None]) -> None:
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


def _model_options(args: argparse.Namespace) -> dict[str, Any]:
    from harnessed.cli.config import load_config, model_options

    return model_options(args.base_url, load_config())


def _build_agent(args: argparse.Namespace) -> HarnessAgent:
    from harnessed.agent import HarnessAgent
    from harnessed.cli.config import (
        cli_workspace,
        load_config,
        model_options,
        model_spec,
        sandbox_option,
    )
    from harnessed.cli.loading import load_object

    if args.demo:
        from harnessed.cli.demo_chat import demo_chat_agent

        return demo_chat_agent(args.workspace)
    if args.agent:
        agent = load_object(args.agent)
        if not isinstance(agent, HarnessAgent):
            raise ValueError(f"--agent must name a HarnessAgent, got {agent!r}")
        if args.max_iters is not None:
            agent.max_iters = args.max_iters
        return agent
    from harnessed.cli.run import cli_model

    config = load_config()
    mode = "bypass" if args.yes else (args.permission_mode or config.permission_mode or "default")
    return HarnessAgent(
        "harnessed",
        cli_model(model_spec(args.model, config), model_options(args.base_url, config)),
        sys_prompt=args.system,
        workspace=cli_workspace(args.workspace, args.data_dir, config),
        permission_mode=mode,
        max_iters=args.max_iters or 10,
        shell=sandbox_option(args.sandbox, config),
    )


async def _main(args: argparse.Namespace, console: Console) -> int:
    if sys.stdin.isatty() and sys.stdout.isatty():
        return await _interactive(args)
    return await _piped(args)


async def _piped(args: argparse.Namespace) -> int:
    """Input from a pipe: lines are read as they come, and echoed."""
    agent = _build_agent(args)
    terminal = _terminal(args, agent, Console(highlight=False), echo=True)
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str | None] = asyncio.Queue()

    def interrupted() -> None:
        if terminal.on_interrupt():
            lines.put_nowait(None)

    loop.add_signal_handler(signal.SIGINT, interrupted)
    try:
        threading.Thread(target=_read_pipe, args=(loop, lines), daemon=True).start()
        return await terminal.run(lines)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await _done(agent)


def _terminal(
    args: argparse.Namespace, agent: HarnessAgent, console: Console, *, echo: bool
) -> ChatTerminal:
    from harnessed.runtime import RuntimeContext

    return ChatTerminal(
        agent,
        agent.session(RuntimeContext(args.user, args.session)),
        console,
        show_thinking=not args.no_thinking,
        model_options=_model_options(args),
        echo=echo,
    )


async def _done(agent: HarnessAgent) -> None:
    from harnessed.cli.windows_cache import remember_window

    remember_window(agent.model)
    await agent.close()


_STARTING = "starting the agent…"


async def _interactive(args: argparse.Namespace) -> int:
    """In a terminal: the prompt is drawn first and the agent is built (its modules imported)
    in a thread meanwhile, so typing can start at once; what is sent before the agent is
    ready waits for it. Ctrl-C or Ctrl-D while it starts leaves."""
    from prompt_toolkit.patch_stdout import patch_stdout

    from harnessed.cli.chat_commands import COMMANDS
    from harnessed.cli.chat_input import LineBuffered, make_prompt, read_lines

    console = Console(
        file=cast("TextIO", LineBuffered(lambda: sys.stdout)),
        force_terminal=True,
        highlight=False,
    )
    ready: list[ChatTerminal] = []
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    prompt = make_prompt(
        COMMANDS,
        data_dir() / "chat_history" if not args.no_history else None,
        lambda: ready[0].status if ready else _STARTING,
        lambda: bool(ready) and (ready[0].asking is not None or ready[0].leaving),
    )
    drawn = asyncio.Event()
    prompt.app.after_render += lambda _: drawn.set()
    agent: HarnessAgent | None = None
    loop = asyncio.get_running_loop()
    with patch_stdout(raw=True):
        reader = asyncio.create_task(
            read_lines(
                prompt,
                lambda: ready[0].prompt_text() if ready else YOU,
                lines,
                lambda: ready[0].on_interrupt() if ready else True,
            )
        )
        try:
            # the prompt first: the build's imports would otherwise share the CPU with it
            waiting = asyncio.ensure_future(drawn.wait())
            await asyncio.wait({waiting, reader}, return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            building = asyncio.ensure_future(asyncio.to_thread(_build_agent, args))
            await asyncio.wait({building, reader}, return_when=asyncio.FIRST_COMPLETED)
            if not building.done():  # left while starting
                building.add_done_callback(_close_unused)
                return 0
            agent = building.result()
            terminal = _terminal(args, agent, console, echo=False)
            terminal.on_change = prompt.app.invalidate
            ready.append(terminal)
            prompt.app.invalidate()

            def interrupted() -> None:
                if terminal.on_interrupt():
                    lines.put_nowait(None)

            loop.add_signal_handler(signal.SIGINT, interrupted)
            try:
                return await terminal.run(lines)
            finally:
                loop.remove_signal_handler(signal.SIGINT)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            if agent is not None:
                await _done(agent)


def _close_unused(building: asyncio.Future[HarnessAgent]) -> None:
    """An agent finished building after the user left: nothing was started on it."""
    if not building.cancelled():
        building.exception()  # retrieved: a failed build after leaving is not reported


def _chat(args: argparse.Namespace, console: Console) -> int:
    if args.max_iters is not None and args.max_iters < 1:
        console.print("--max-iters must be at least 1", style="red", markup=False)
        return 2
    try:
        return asyncio.run(_main(args, console))
    except (ValueError, TypeError, ImportError) as exc:
        console.print(f"cannot start the chat: {exc}", style="red", markup=False, soft_wrap=True)
        return 2
