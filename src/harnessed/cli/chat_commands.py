"""The slash commands of ``harnessed chat``."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from harnessed.cli.chat import ChatTerminal

__all__ = ["COMMANDS", "run_command"]

COMMANDS: dict[str, str] = {
    "/help": "this list",
    "/steer": "TEXT: a message the running turn reads at its next step",
    "/resume": "[SESSION]: continue the interrupted turn, or open another session",
    "/sessions": "the sessions you have with this agent",
    "/clear": "start a new, empty session",
    "/model": "[PROVIDER:MODEL]: show the model, or switch to another",
    "/cost": "tokens used in this chat",
    "/compact": "summarize the earlier history now (the log keeps every message)",
    "/quit": "leave (Ctrl-D too)",
}

Handler = Callable[["ChatTerminal", str], Awaitable[bool]]


def _say(term: ChatTerminal, text: str, style: str = "dim") -> None:
    term.console.print(text, style=style, markup=False, highlight=False)


def _busy(term: ChatTerminal) -> bool:
    if term.session.running is None:
        return False
    _say(term, "a turn is running: wait for it, or Ctrl-C to stop it first", "yellow")
    return True


async def _help(term: ChatTerminal, arg: str) -> bool:
    width = max(len(name) for name in COMMANDS)
    for name, meta in COMMANDS.items():
        term.console.print(f"  [bold]{name.ljust(width)}[/]  {escape(meta)}", highlight=False)
    _say(
        term,
        "Enter sends · Alt-Enter adds a line · ↑/↓ history · Tab completes · "
        "Ctrl-C stops a turn (asks to leave when idle)",
    )
    return True


async def _quit(term: ChatTerminal, arg: str) -> bool:
    return False


async def _steer(term: ChatTerminal, arg: str) -> bool:
    from harnessed.sessions import SessionIdleError

    if not arg:
        _say(term, "usage: /steer TEXT", "red")
        return True
    try:
        term.session.steer(arg)
    except SessionIdleError:
        _say(term, "no turn is running; send it as a message instead")
        return True
    _say(term, "↪ the agent will read this at its next step")
    return True


async def _resume(term: ChatTerminal, arg: str) -> bool:
    from harnessed.runtime import RuntimeContext
    from harnessed.sessions import NothingToResumeError

    if arg and arg != term.session.session_id:
        if _busy(term):
            return True
        await term.open(term.agent.session(RuntimeContext(term.session.user_id, arg)))
        _say(term, f"session {arg}", "cyan")
        return True
    try:
        await term.session.resume()
    except NothingToResumeError as exc:
        _say(term, str(exc))
    return True


async def _sessions(term: ChatTerminal, arg: str) -> bool:
    from harnessed.runtime import RuntimeContext

    known = await term.agent.sessions(term.session.user_id)
    if not known:
        _say(term, "no sessions yet")
        return True
    for info in known[:20]:
        ctx = RuntimeContext(term.session.user_id, info.session_id)
        title = ""
        for message in await term.agent.session_messages(ctx):
            if message.role == "user" and message.text.strip():
                title = " ".join(message.text.split())[:60]
                break
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated_at))
        mark = "*" if info.session_id == term.session.session_id else " "
        term.console.print(
            f"{mark} [cyan]{escape(info.session_id)}[/]  [dim]{when}[/]  {escape(title)}",
            highlight=False,
        )
    _say(term, "/resume SESSION opens one")
    return True


async def _clear(term: ChatTerminal, arg: str) -> bool:
    from harnessed.runtime import RuntimeContext

    if _busy(term):
        return True
    session_id = "chat-" + time.strftime("%Y%m%d-%H%M%S")
    await term.open(term.agent.session(RuntimeContext(term.session.user_id, session_id)))
    _say(term, f"new session {session_id} (the old one stays: /sessions)", "cyan")
    return True


async def _model(term: ChatTerminal, arg: str) -> bool:
    if not arg:
        _say(term, f"model: {getattr(term.agent.model, 'name', term.agent.model)}", "")
        return True
    if _busy(term):
        return True
    from harnessed.cli.run import cli_model

    try:
        term.agent.model = cli_model(arg, term.model_options)
    except (ValueError, TypeError, ImportError) as exc:
        _say(term, f"cannot use {arg}: {exc}", "red")
        return True
    _say(term, f"model: {term.agent.model.name} (from the next turn)", "cyan")
    return True


async def _cost(term: ChatTerminal, arg: str) -> bool:
    counts = term.usage.get(term.session.session_id, [0, 0, 0, 0])
    tokens_in, tokens_out, requests, unreported = counts
    line = f"{tokens_in:,} in / {tokens_out:,} out tokens over {requests} model request(s)"
    if unreported:
        line += f" ({unreported} reported no usage and are not counted)"
    _say(term, line, "")
    _say(term, "no prices are configured, so no cost is computed")
    return True


async def _compact(term: ChatTerminal, arg: str) -> bool:
    if term.session.running is not None:  # or just ending: the summary comes after it
        _say(term, "waiting for the running turn to end (Ctrl-C stops it)…")
        await term.session.wait_idle()
    used = term.context.get("estimated_input_tokens")
    limit = term.context.get("input_limit")
    if isinstance(used, int) and isinstance(limit, int) and limit > 0:
        _say(term, f"context before: {used:,} of {limit:,} tokens ({100 * used // limit}%)", "")
    _say(term, "summarizing the earlier history…")
    try:
        report = await term.agent.compact(term.session.ctx)
    except Exception as exc:  # the model or the store failed: say so, keep chatting
        _say(term, f"could not compact: {type(exc).__name__}: {exc}", "red")
        return True
    if report.status == "compacted":
        _say(
            term,
            f"summarized {report.summarized_messages} earlier message(s): the history went "
            f"from {report.messages_before} to {report.messages_after} messages, "
            f"~{report.tokens_before:,} to ~{report.tokens_after:,} tokens "
            "(the session log keeps every original message)",
            "green",
        )
    elif report.status == "failed":
        _say(term, f"the summary failed, nothing was changed: {report.error}", "red")
    else:
        _say(term, report.note)
    return True


_HANDLERS: dict[str, Handler] = {
    "/help": _help,
    "/?": _help,
    "/quit": _quit,
    "/exit": _quit,
    "/steer": _steer,
    "/resume": _resume,
    "/sessions": _sessions,
    "/clear": _clear,
    "/new": _clear,
    "/model": _model,
    "/cost": _cost,
    "/compact": _compact,
}


async def run_command(term: ChatTerminal, name: str, arg: str) -> bool:
    """Run ``/name arg``; ``False`` when the chat should end."""
    handler = _HANDLERS.get(name)
    if handler is None:  # a unique prefix stands for its command: /he is /help
        matches = [known for known in COMMANDS if known.startswith(name)]
        handler = _HANDLERS[matches[0]] if len(matches) == 1 and len(name) > 1 else None
    if handler is None:
        _say(term, f"unknown command {name} · /help lists the commands", "red")
        return True
    return await handler(term, arg)
