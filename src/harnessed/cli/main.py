"""``harnessed run`` streams an agent's work; ``harnessed demo`` shows the harness end to end;
``inspect``, ``reindex`` and ``search`` look into recorded sessions."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from harnessed.agent import HarnessAgent
from harnessed.cli.demo import DEMO_TASK, demo_model, write_demo_project
from harnessed.cli.inspect import inspect_session
from harnessed.cli.render import EventPrinter
from harnessed.cli.sessions import open_log, reindex, search
from harnessed.cli.skills import list_skills, validate_skills
from harnessed.events import ConfirmationRequestEvent
from harnessed.models.base import Model
from harnessed.runtime import RuntimeContext
from harnessed.session import JsonlSessionLogStore, SessionKey

__all__ = ["main"]

_DEFAULT_MODEL = "openai:gpt-4.1-mini"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harnessed", description="A harness for long-running LLM agents."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run an agent on a task and stream its work")
    run.add_argument("task", help="what the agent should do")
    run.add_argument(
        "--model",
        default=os.environ.get("HARNESSED_MODEL", _DEFAULT_MODEL),
        help="provider:model, e.g. openai:gpt-4.1-mini or anthropic:claude-sonnet-4-5 "
        "(default: $HARNESSED_MODEL or %(default)s)",
    )
    run.add_argument("--workspace", default=".", help="the agent's workspace (default: .)")
    run.add_argument("--session", default=None, help="session id (default: the agent name)")
    run.add_argument("--user", default="default", help="user id (default: default)")
    run.add_argument("--agent", default="harnessed", help="agent name (default: harnessed)")
    run.add_argument("--system", default="", help="system prompt")
    run.add_argument("--max-iters", type=int, default=10, help="model requests per call")
    run.add_argument("--no-thinking", action="store_true", help="hide streamed thinking")
    run.add_argument(
        "--permission-mode",
        choices=("default", "accept_edits", "explore", "bypass", "dont_ask"),
        default=None,
        help="ask before tools run (default: permissions off); you answer each request here",
    )
    run.add_argument("--tasks", action="store_true", help="give the model a task list")
    run.add_argument("--plan", action="store_true", help="give the model plan mode")

    inspect = sub.add_parser(
        "inspect", help="show what the model saw: per-request budget breakdown of a session"
    )
    inspect.add_argument("--workspace", default=".", help="the agent's workspace (default: .)")
    inspect.add_argument("--agent", default="harnessed", help="agent name (default: harnessed)")
    inspect.add_argument("--user", default="default", help="user id (default: default)")
    inspect.add_argument("--session", default=None, help="session id (default: the agent name)")
    inspect.add_argument("--last", type=int, default=10, help="how many requests (default: 10)")
    inspect.add_argument("--json", action="store_true", help="print the manifests as JSON")

    reindex = sub.add_parser(
        "reindex", help="rebuild the search index of an agent's session logs from the JSONL files"
    )
    reindex.add_argument("--workspace", default=".", help="the agent's workspace (default: .)")
    reindex.add_argument("--agent", default="harnessed", help="agent name (default: harnessed)")
    reindex.add_argument("--user", default=None, help="only this user (default: every user)")
    reindex.add_argument("--backend", choices=("sqlite", "tantivy"), default="sqlite")
    reindex.add_argument(
        "--tokenizer", default=None, help="SQLite FTS5 tokenizer, e.g. trigram (default: words)"
    )

    search = sub.add_parser("search", help="search the messages of a user's sessions")
    search.add_argument("query", help="words to look for")
    search.add_argument("--workspace", default=".", help="the agent's workspace (default: .)")
    search.add_argument("--agent", default="harnessed", help="agent name (default: harnessed)")
    search.add_argument("--user", default="default", help="user id (default: default)")
    search.add_argument("--match", choices=("phrase", "all", "any"), default="phrase")
    search.add_argument("--limit", type=int, default=10, help="most hits (default: 10)")
    search.add_argument("--backend", choices=("sqlite", "tantivy"), default="sqlite")
    search.add_argument("--tokenizer", default=None, help="as given to reindex")

    skills = sub.add_parser("skills", help="list the skills an agent sees, or validate skills")
    skills_sub = skills.add_subparsers(dest="skills_command", required=True)
    listing = skills_sub.add_parser("list", help="the skills of a workspace and skill folders")
    listing.add_argument("--workspace", default=".", help="the agent's workspace (default: .)")
    listing.add_argument(
        "--skill-dir", action="append", default=[], help="an application skill folder or URL"
    )
    listing.add_argument("--agent", default="harnessed", help="agent name (default: harnessed)")
    listing.add_argument("--user", default="default", help="user id (default: default)")
    check = skills_sub.add_parser("validate", help="check skill folders against the format")
    check.add_argument("path", help="a skill folder, or a folder of skill folders")

    demo = sub.add_parser("demo", help="a scripted agent fixes a bug with real tools (no API key)")
    demo.add_argument("--workspace", default=None, help="directory for the demo (default: temp)")
    return parser


def ask_user(question: str) -> bool:
    """Ask a yes/no question on the terminal (blocking; run it in a thread)."""
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


async def _stream(
    agent: HarnessAgent, task: str, ctx: RuntimeContext, printer: EventPrinter
) -> int:
    try:
        async for event in agent.stream_events(task, ctx):
            printer.handle(event)
            if isinstance(event, ConfirmationRequestEvent):
                printer.close()  # no spinner while the user reads and answers
                approved = await asyncio.to_thread(
                    ask_user, f"Allow {event.call.name} ({event.reason})?"
                )
                await agent.respond(ctx, event.request_id, approved)
    except Exception:  # the error event was printed already
        printer.close()
        return 1
    finally:
        printer.close()
    return 0


def _run(args: argparse.Namespace, console: Console) -> int:
    if args.max_iters < 1:
        console.print("[red]--max-iters must be at least 1[/]")
        return 2
    try:
        model: Model | str = args.model
        agent = HarnessAgent(
            args.agent,
            model,
            sys_prompt=args.system,
            workspace=args.workspace,
            max_iters=args.max_iters,
            permission_mode=args.permission_mode,
            enable_task_list=args.tasks,
            enable_plan_mode=args.plan,
        )
    except (ValueError, TypeError, ImportError) as exc:
        console.print(f"[red]cannot start the agent:[/] {exc}")
        return 2
    ctx = RuntimeContext(user_id=args.user, session_id=args.session)
    printer = EventPrinter(console, show_thinking=not args.no_thinking)
    return asyncio.run(_stream(agent, args.task, ctx, printer))


def _demo(args: argparse.Namespace, console: Console) -> int:
    console.print(
        "[bold]harnessed demo[/] — a [italic]scripted[/] model (no API key, no network) drives "
        "real tools in a throw-away workspace.\n"
    )
    with tempfile.TemporaryDirectory(prefix="harnessed-demo-") as tmp:
        root = Path(args.workspace) if args.workspace else Path(tmp)
        write_demo_project(root)
        console.print(f"workspace: {root}\ntask: {DEMO_TASK}\n")
        agent = HarnessAgent(
            "demo",
            demo_model(),
            sys_prompt="You fix bugs in small Python projects. Verify every fix by running tests.",
            workspace=root,
        )
        code = asyncio.run(
            _stream(agent, DEMO_TASK, RuntimeContext("demo-user"), EventPrinter(console))
        )
    return code


def _inspect(args: argparse.Namespace, console: Console) -> int:
    root = Path(args.workspace)
    if not root.is_dir():
        console.print(f"[red]no workspace at {root}[/]")
        return 2
    if args.last < 1:
        console.print("[red]--last must be at least 1[/]")
        return 2
    store = JsonlSessionLogStore(root.resolve() / "agents")
    key = SessionKey(args.agent, args.user, args.session or args.agent)
    return asyncio.run(inspect_session(store, key, console, last=args.last, as_json=args.json))


def _sessions(args: argparse.Namespace, console: Console) -> int:
    root = Path(args.workspace)
    if not root.is_dir():
        console.print(f"[red]no workspace at {root}[/]")
        return 2
    if args.command == "search" and not 1 <= args.limit <= 200:
        console.print("[red]--limit must be between 1 and 200[/]")
        return 2
    try:
        log = open_log(root, args.backend, args.tokenizer)
    except ImportError as exc:
        console.print(f"[red]{exc}[/]")
        return 2
    if args.command == "reindex":
        return asyncio.run(reindex(log, args.agent, args.user, console))
    return asyncio.run(
        search(
            log,
            args.agent,
            args.user,
            args.query,
            limit=args.limit,
            match=args.match,
            console=console,
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console()
    if args.command == "run":
        return _run(args, console)
    if args.command == "inspect":
        return _inspect(args, console)
    if args.command in ("reindex", "search"):
        return _sessions(args, console)
    if args.command == "skills":
        if args.skills_command == "validate":
            return validate_skills(Path(args.path), console)
        return list_skills(Path(args.workspace), args.skill_dir, args.agent, args.user, console)
    return _demo(args, console)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
