"""``harnessed run``: one task, streamed to the terminal, in a new session unless told otherwise.

Writes and ``execute`` ask for approval by default (``--yes`` or ``--permission-mode`` change
that); "always" allows a tool for the rest of the session. The exit code says how the call
ended: 0 done, 1 error, 2 usage, 3 stopped at ``--max-iters``, 4 waiting for approval (no one
could answer), 5 stopped by a capability (it asked the call to stop; the reason is printed),
130 interrupted. Ctrl-C saves what was done so far; ``--continue`` resumes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from harnessed.agent import HarnessAgent
from harnessed.cli.approvals import TerminalApprover
from harnessed.cli.recording import RecordingModel, last_request_path
from harnessed.cli.render import EventPrinter
from harnessed.events import AgentEndEvent, ConfirmationRequestEvent, ModelCallStartEvent
from harnessed.models.registry import resolve_model
from harnessed.permissions.rules import PermissionRule
from harnessed.questions.answers import is_question
from harnessed.runtime import RuntimeContext
from harnessed.skills import Skills
from harnessed.subagents import Subagents

__all__ = ["EXIT_CODES", "register", "run_command", "stream_run"]

DEFAULT_MODEL = "openai:gpt-4.1-mini"
EXIT_CODES = {
    "completed": 0,
    "error": 1,
    "max_iters": 3,
    "pending": 4,
    "stopped": 5,
    "cancelled": 130,
}
_MODES = ("default", "accept_edits", "explore", "bypass", "dont_ask")


def register(sub: Any) -> None:
    run = sub.add_parser("run", help="run an agent on a task and stream its work")
    run.add_argument("task", help="what the agent should do")
    run.add_argument(
        "--model",
        default=os.environ.get("HARNESSED_MODEL", DEFAULT_MODEL),
        help="provider:model: openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:qwen3 "
        "(default: $HARNESSED_MODEL or %(default)s)",
    )
    run.add_argument(
        "--base-url", default=None, help="the server's URL, e.g. http://localhost:8000/v1"
    )
    run.add_argument("--workspace", default=".", help="the agent's workspace (default: .)")
    which = run.add_mutually_exclusive_group()
    which.add_argument("--session", default=None, help="continue this session (default: new)")
    which.add_argument(
        "--continue",
        dest="resume",
        action="store_true",
        help="continue the most recent session of this agent and user",
    )
    run.add_argument("--user", default="default", help="user id (default: default)")
    run.add_argument("--agent", default="harnessed", help="agent name (default: harnessed)")
    run.add_argument("--system", default="", help="system prompt")
    run.add_argument("--max-iters", type=int, default=10, help="model requests per call")
    run.add_argument("--no-thinking", action="store_true", help="hide streamed thinking")
    asks = run.add_mutually_exclusive_group()
    asks.add_argument(
        "--permission-mode",
        choices=_MODES,
        default="default",
        help="which tool calls ask first (default: default = writes and execute ask)",
    )
    asks.add_argument(
        "--yes", action="store_true", help="run every tool without asking (bypass mode)"
    )
    run.add_argument("--tasks", action="store_true", help="give the model a task list")
    run.add_argument("--plan", action="store_true", help="give the model plan mode")
    run.add_argument(
        "--mcp", action="append", default=[], help="an MCP server (command line or URL); repeatable"
    )
    run.add_argument(
        "--subagents",
        action="store_true",
        help="let the model delegate to sub-agents (on when the workspace has subagents/)",
    )
    run.add_argument(
        "--skill-dir",
        action="append",
        default=[],
        help="a folder (or fsspec URL) of skills, besides the workspace's skills/; repeatable",
    )
    run.set_defaults(handler=run_command)


def _wants_subagents(args: argparse.Namespace) -> bool:
    return bool(args.subagents) or (Path(args.workspace) / "subagents").is_dir()


def new_session_id() -> str:
    """A fresh, sortable session id: ``20260101-120000-a1b2``."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def run_command(args: argparse.Namespace, console: Console) -> int:
    if args.max_iters < 1:
        console.print("[red]--max-iters must be at least 1[/]")
        return 2
    options = {"base_url": args.base_url} if args.base_url else {}
    try:
        model = resolve_model(args.model, **options)
        agent = HarnessAgent(
            args.agent,
            model,
            sys_prompt=args.system,
            workspace=args.workspace,
            max_iters=args.max_iters,
            permission_mode="bypass" if args.yes else args.permission_mode,
            enable_task_list=args.tasks,
            enable_plan_mode=args.plan,
            mcp_servers=args.mcp,
            capabilities=[Subagents()] if _wants_subagents(args) else [],
            skills=Skills(args.skill_dir),
        )
    except (ValueError, TypeError, ImportError) as exc:
        console.print(f"[red]cannot start the agent:[/] {escape(str(exc))}")
        return 2
    session: list[str] = []
    try:
        return asyncio.run(_run(agent, args, console, session))
    except KeyboardInterrupt:
        where = f" in session {session[0]}" if session else ""
        console.print(
            f"\n[bold yellow]interrupted[/] — what was done so far is saved{escape(where)}; "
            f"continue with: harnessed run --session {escape(session[0] if session else '…')} "
            "'…'",
            highlight=False,
        )
        return EXIT_CODES["cancelled"]


async def _run(
    agent: HarnessAgent, args: argparse.Namespace, console: Console, session: list[str]
) -> int:
    try:
        session_id = args.session
        if args.resume:
            known = await agent.sessions(args.user)
            if not known:
                console.print(f"[red]no session of user {escape(args.user)!r} to continue[/]")
                return 2
            session_id = known[0].session_id
        session_id = session_id or new_session_id()
        session.append(session_id)
        ctx = RuntimeContext(user_id=args.user, session_id=session_id)
        if agent.workspace is not None:  # kept for ``harnessed inspect --show``
            path = last_request_path(agent.workspace, agent.name, args.user, session_id)
            agent.model = RecordingModel(agent.model, agent.workspace, path)
        printer = EventPrinter(console, show_thinking=not args.no_thinking)
        approver = TerminalApprover(console)
        await _remembered(agent, ctx, approver)
        try:
            status = await stream_run(agent, args.task, ctx, printer, approver)
        finally:  # also when interrupted: "always" answers belong to the session
            if approver.always:
                await _remember(agent, ctx, approver.always)
        if status == "pending":
            console.print(
                "[yellow]waiting for approval:[/] no answer could be read. Continue with "
                f"harnessed run --session {escape(session_id)} --yes '…' (or answer in a terminal)"
            )
        return EXIT_CODES.get(status, 1)
    finally:
        await agent.close()


async def stream_run(
    agent: HarnessAgent,
    task: str,
    ctx: RuntimeContext,
    printer: EventPrinter,
    approver: TerminalApprover,
) -> str:
    """Stream one call, answering confirmation requests in the terminal; its end status."""
    status = "error"
    events = agent.stream_events(task, ctx)
    try:
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                printer.handle(event)
                if isinstance(event, ModelCallStartEvent) and event.source is None:
                    if isinstance(agent.model, RecordingModel):  # the run's, not a child's
                        agent.model.expect(event.model_call_id)
                elif isinstance(event, AgentEndEvent) and event.source is None:
                    status = event.status
                elif isinstance(event, ConfirmationRequestEvent):  # a sub-agent's too
                    printer.close()  # no spinner while the user reads and answers
                    if is_question(event.details):
                        if await approver.question(agent, ctx, event):
                            continue
                    else:
                        answer = await approver.answer(event)
                        if answer is not None:
                            await agent.respond(
                                ctx, event.request_id, answer.approved, feedback=answer.reason
                            )
                            continue
                    if event.source is not None:  # a sub-agent cannot park: declined
                        await agent.respond(ctx, event.request_id, False, feedback=_NO_ONE)
                        continue
                    status = "pending"  # nobody to ask: the step waits in the session
                    break
    except asyncio.CancelledError:
        printer.close()
        raise
    except Exception:  # the error event was printed already
        status = "error"
    finally:
        printer.close()
    return status


_NO_ONE = "Nobody could answer in the terminal, so the request was declined."


async def _remembered(agent: HarnessAgent, ctx: RuntimeContext, approver: TerminalApprover) -> None:
    """Tools the user already allowed "always" in this session."""
    state = await agent.load_state(ctx)
    for raw in state.permissions.get("rules") or []:
        rule = PermissionRule.from_dict(raw)
        if rule.behavior == "allow" and not rule.args:
            approver.always.add(rule.tool)


async def _remember(agent: HarnessAgent, ctx: RuntimeContext, tools: set[str]) -> None:
    """Keep "always" answers with the session, as allow rules of its own."""
    state = await agent.load_state(ctx)
    rules = [PermissionRule.from_dict(r) for r in state.permissions.get("rules") or []]
    known = {r.tool for r in rules if r.behavior == "allow" and not r.args}
    rules.extend(PermissionRule(tool, "allow") for tool in sorted(tools - known))
    await agent.set_permission_rules(ctx, rules)
