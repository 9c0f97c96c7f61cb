"""``harnessed run``: one task, streamed to the terminal, in a new session unless told otherwise.

Writes and ``execute`` ask for approval by default (``--yes`` or ``--permission-mode`` change
that); "always" allows a tool for the rest of the session. The exit code says how the call
ended: 0 done, 1 error, 2 usage, 3 stopped at ``--max-iters``, 4 waiting for approval (no one
could answer), 5 stopped by a capability (it asked the call to stop; the reason is printed),
6 stopped at a usage limit (``--max-requests``, ``--max-input-tokens``, ``--max-output-tokens``,
``--max-cost`` for the call, ``--session-max-cost`` for the whole session), 130 interrupted.
Ctrl-C saves what was done so far; ``--continue`` resumes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import signal
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from harnessed.agent import HarnessAgent
from harnessed.cli.approvals import TerminalApprover
from harnessed.cli.config import (
    DEFAULT_MODEL,
    cli_workspace,
    load_config,
    model_options,
    model_spec,
    sandbox_option,
)
from harnessed.cli.recording import RecordingModel, last_request_path
from harnessed.cli.render import EventPrinter
from harnessed.cost.limits import UsageLimits
from harnessed.events import AgentEndEvent, ConfirmationRequestEvent, ModelCallStartEvent
from harnessed.models.registry import resolve_model
from harnessed.permissions import Permissions
from harnessed.permissions.answers import is_question
from harnessed.permissions.rules import PermissionRule
from harnessed.permissions.state import PERMISSIONS
from harnessed.runtime import RuntimeContext, SessionRef
from harnessed.skills import Skills
from harnessed.subagents import Subagents

__all__ = ["EXIT_CODES", "register", "run_command", "stream_run"]

EXIT_CODES = {
    "completed": 0,
    "error": 1,
    "max_iters": 3,
    "pending": 4,
    "stopped": 5,
    "limit": 6,
    "cancelled": 130,
    "interrupted": 130,
}
_MODES = ("default", "accept_edits", "explore", "bypass", "dont_ask")


def register(sub: Any) -> None:
    run = sub.add_parser("run", help="run an agent on a task and stream its work")
    run.add_argument("task", help="what the agent should do")
    run.add_argument(
        "--model",
        default=None,
        help="provider:model: openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:qwen3 "
        f"(default: $HARNESSED_MODEL, harnessed.toml or {DEFAULT_MODEL})",
    )
    run.add_argument(
        "--base-url", default=None, help="the server's URL, e.g. http://localhost:8000/v1"
    )
    run.add_argument(
        "--workspace",
        default=None,
        help="the agent's workspace, holding its sessions too (default: the current directory, "
        "with sessions and state in the user's data directory)",
    )
    run.add_argument(
        "--data-dir",
        default=None,
        help="where sessions and state go (default: harnessed.toml's data_dir, else "
        "$XDG_DATA_HOME/harnessed/projects/…; inside --workspace when that is given)",
    )
    which = run.add_mutually_exclusive_group()
    which.add_argument("--session", default=None, help="continue this session (default: new)")
    which.add_argument(
        "--continue",
        dest="resume",
        action="store_true",
        help="continue the most recent session of this agent and user",
    )
    run.add_argument("--user", default="default", help="user id (default: default)")
    run.add_argument(
        "--agent",
        default="harnessed",
        metavar="NAME|MODULE:OBJECT",
        help="the agent's name (default: harnessed), or your application's HarnessAgent as "
        "module:object (then --model, --system, --workspace and the like are its own)",
    )
    run.add_argument(
        "--sandbox",
        choices=("host", "bubblewrap", "none"),
        default=None,
        help="where execute runs (default: harnessed.toml, else the agent's default)",
    )
    run.add_argument("--system", default="", help="system prompt")
    run.add_argument("--max-iters", type=int, default=10, help="model requests per call")
    run.add_argument(
        "--max-requests",
        type=int,
        default=None,
        help="model requests per call, sub-agents included",
    )
    run.add_argument("--max-input-tokens", type=int, default=None, help="input tokens per call")
    run.add_argument("--max-output-tokens", type=int, default=None, help="output tokens per call")
    run.add_argument("--max-cost", type=float, default=None, help="US dollars per call")
    run.add_argument(
        "--session-max-cost", type=float, default=None, help="US dollars for the whole session"
    )
    run.add_argument("--no-thinking", action="store_true", help="hide streamed thinking")
    asks = run.add_mutually_exclusive_group()
    asks.add_argument(
        "--permission-mode",
        choices=_MODES,
        default=None,
        help="which tool calls ask first (default: harnessed.toml, else default = writes and "
        "execute ask)",
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


def _limits(
    requests: int | None, input_tokens: int | None, output_tokens: int | None, cost: float | None
) -> UsageLimits | None:
    if requests is None and input_tokens is None and output_tokens is None and cost is None:
        return None
    try:
        return UsageLimits(requests, input_tokens, output_tokens, cost)
    except ValueError as exc:  # name the flag, not the field
        flag = {
            "requests": "--max-requests",
            "input_tokens": "--max-input-tokens",
            "output_tokens": "--max-output-tokens",
            "cost_usd": "--max-cost / --session-max-cost",
        }
        field = str(exc).split(" ")[0].removeprefix("UsageLimits.")
        raise ValueError(f"{flag.get(field, field)} must be positive") from None


def _wants_subagents(args: argparse.Namespace) -> bool:
    return bool(args.subagents) or (Path(args.workspace or ".") / "subagents").is_dir()


def new_session_id() -> str:
    """A fresh, sortable session id: ``20260101-120000-a1b2``."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def cli_model(spec: str, options: dict[str, Any]) -> Any:
    """The model of ``spec``, with the window an earlier process learned for its server."""
    from harnessed.cli.windows_cache import remembered_window

    model = resolve_model(spec, **options)
    window = remembered_window(model)
    if window is not None:
        with contextlib.suppress(TypeError):  # an adapter that takes no context_window=
            model = resolve_model(spec, context_window=window, **options)
    return model


def _agent(args: argparse.Namespace) -> HarnessAgent:
    """``--agent module:object`` loaded, else an agent built from the flags and the file."""
    if ":" in args.agent:
        from harnessed.cli.loading import load_object

        agent = load_object(args.agent)
        if not isinstance(agent, HarnessAgent):
            raise ValueError(f"--agent must name a HarnessAgent, got {agent!r}")
        agent.max_iters = args.max_iters
        if args.yes or args.permission_mode:  # the flags win over the agent's own mode
            permissions = agent.capability(Permissions)
            assert permissions is not None  # every agent has one
            permissions.set_mode("bypass" if args.yes else args.permission_mode)
        limits = _limits(
            args.max_requests, args.max_input_tokens, args.max_output_tokens, args.max_cost
        )
        agent.usage_limits = limits or agent.usage_limits
        session = _limits(None, None, None, args.session_max_cost)
        agent.session_usage_limits = session or agent.session_usage_limits
        return agent
    config = load_config()
    mode = "bypass" if args.yes else (args.permission_mode or config.permission_mode or "default")
    return HarnessAgent(
        args.agent,
        cli_model(model_spec(args.model, config), model_options(args.base_url, config)),
        sys_prompt=args.system,
        workspace=cli_workspace(args.workspace, args.data_dir, config),
        max_iters=args.max_iters,
        permission_mode=mode,
        enable_task_list=args.tasks,
        enable_plan_mode=args.plan,
        mcp_servers=args.mcp,
        capabilities=[Subagents()] if _wants_subagents(args) else [],
        skills=Skills(args.skill_dir),
        shell=sandbox_option(args.sandbox, config),
        usage_limits=_limits(
            args.max_requests, args.max_input_tokens, args.max_output_tokens, args.max_cost
        ),
        session_usage_limits=_limits(None, None, None, args.session_max_cost),
    )


def run_command(args: argparse.Namespace, console: Console) -> int:
    if args.max_iters < 1:
        console.print("[red]--max-iters must be at least 1[/]")
        return 2
    try:
        agent = _agent(args)
    except (ValueError, TypeError, ImportError) as exc:
        console.print(f"cannot start the agent: {exc}", style="red", markup=False, soft_wrap=True)
        return 2
    session: list[str] = []
    try:
        return asyncio.run(_run(agent, args, console, session))
    except (KeyboardInterrupt, asyncio.CancelledError):
        _say_interrupted(console, session[0] if session else None)
        return EXIT_CODES["cancelled"]


def _say_interrupted(console: Console, session_id: str | None) -> None:
    where = f" in session {session_id}" if session_id else ""
    console.print(
        f"\n[bold yellow]interrupted[/] — what was done so far is saved{escape(where)}; "
        f"continue with: harnessed run --session {escape(session_id or '…')} '…'",
        highlight=False,
    )


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
        interrupts = Interrupts(console)
        interrupts.task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
            loop.add_signal_handler(signal.SIGINT, interrupts)
        try:
            status = await stream_run(agent, args.task, ctx, printer, approver, interrupts)
        finally:  # also when interrupted: "always" answers belong to the session
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            if approver.always:
                await _remember(agent, ctx, approver.always)
        if status == "interrupted":
            _say_interrupted(console, session_id)
        if status == "pending":
            console.print(
                "[yellow]waiting for approval:[/] no answer could be read. Continue with "
                f"harnessed run --session {escape(session_id)} --yes '…' (or answer in a terminal)"
            )
        return EXIT_CODES.get(status, 1)
    finally:
        from harnessed.cli.windows_cache import remember_window

        remember_window(agent.model)
        await agent.close()


class Interrupts:
    """Ctrl-C during ``harnessed run``: the first asks the turn to stop at its next safe point
    (what it streamed so far is kept, as in ``chat``); a second one, or one while the user is
    being asked, stops at once."""

    def __init__(self, console: Console) -> None:
        from harnessed.turns.control import TurnControl

        self.console = console
        self.control = TurnControl()
        self.asking = False
        self.task: asyncio.Task[Any] | None = None

    def __call__(self) -> None:
        if self.asking or self.control.interrupted or self.task is None:
            if self.task is not None:
                self.task.cancel()
            return
        self.control.interrupt()
        self.console.print(
            "interrupting: the turn stops at its next step (Ctrl-C again stops at once)",
            style="yellow",
            markup=False,
        )


async def stream_run(
    agent: HarnessAgent,
    task: str,
    ctx: RuntimeContext,
    printer: EventPrinter,
    approver: TerminalApprover,
    interrupts: Interrupts | None = None,
) -> str:
    """Stream one call, answering confirmation requests in the terminal; its end status."""
    if interrupts is None:
        return await _stream(agent, agent.stream_events(task, ctx), ctx, printer, approver, None)
    from harnessed.turns.lease import turn_lease

    def lost() -> None:
        interrupts.control.interrupt("the turn lease was lost")

    key = SessionRef.of(agent.name, ctx).token
    async with turn_lease(agent.turn_gate, key, lost):  # a turn with a control holds its lease
        events = agent.stream_events(task, ctx, control=interrupts.control)
        return await _stream(agent, events, ctx, printer, approver, interrupts)


async def _stream(
    agent: HarnessAgent,
    events: Any,
    ctx: RuntimeContext,
    printer: EventPrinter,
    approver: TerminalApprover,
    interrupts: Interrupts | None,
) -> str:
    status = "error"
    try:
        async with contextlib.aclosing(events):
            async for event in events:
                printer.handle(event)
                if isinstance(event, ModelCallStartEvent) and event.source is None:
                    if isinstance(agent.model, RecordingModel):  # the run's, not a child's
                        agent.model.expect(event.model_call_id)
                elif isinstance(event, AgentEndEvent) and event.source is None:
                    status = event.status
                elif isinstance(event, ConfirmationRequestEvent):  # a sub-agent's too
                    printer.close()  # no spinner while the user reads and answers
                    if interrupts is not None:
                        interrupts.asking = True
                    try:
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
                    finally:
                        if interrupts is not None:
                            interrupts.asking = False
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
    for raw in state.get(PERMISSIONS).get("rules") or []:
        rule = PermissionRule.from_dict(raw)
        if rule.behavior == "allow" and not rule.args:
            approver.always.add(rule.tool)


async def _remember(agent: HarnessAgent, ctx: RuntimeContext, tools: set[str]) -> None:
    """Keep "always" answers with the session, as allow rules of its own."""
    state = await agent.load_state(ctx)
    rules = [PermissionRule.from_dict(r) for r in state.get(PERMISSIONS).get("rules") or []]
    known = {r.tool for r in rules if r.behavior == "allow" and not r.args}
    rules.extend(PermissionRule(tool, "allow") for tool in sorted(tools - known))
    await agent.set_permission_rules(ctx, rules)
