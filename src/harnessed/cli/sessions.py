"""``harnessed sessions``, ``reindex`` and ``search``: recorded sessions from the terminal.

``sessions`` lists a user's sessions of an agent, newest first; ``reindex`` rebuilds the
full-text index of an agent's session logs in a local workspace (all users, or one) from the
JSONL files, which stay the truth; ``search`` runs a query the way the ``session_search`` tool
does, for one user. None of them creates anything in a directory that holds no session logs.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harnessed.cli.config import DATA_DIR_HELP, WORKSPACE_HELP, ConfigError, runtime_root
from harnessed.log.search import MatchMode, SearchIndex, query_words, snippet
from harnessed.stores.local.indexed import IndexedSessionLogStore
from harnessed.stores.local.jsonl import JsonlSessionLogStore
from harnessed.stores.local.sqlite_index import DEFAULT_TOKENIZER, SqliteSearchIndex
from harnessed.stores.local.tantivy_index import TantivySearchIndex
from harnessed.workspace.layout import Workspace

__all__ = ["list_sessions", "open_log", "register", "reindex", "search"]


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", default=None, help=WORKSPACE_HELP)
    parser.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    parser.add_argument("--agent", default="harnessed", help="agent name (default: harnessed)")


def register(sub: Any) -> None:
    listing = sub.add_parser("sessions", help="list a user's sessions, most recent first")
    _common(listing)
    listing.add_argument("--user", default="default", help="user id (default: default)")
    listing.add_argument("--limit", type=int, default=20, help="most sessions (default: 20)")
    listing.set_defaults(handler=sessions_command)

    rebuild = sub.add_parser(
        "reindex", help="rebuild the search index of an agent's session logs from the JSONL files"
    )
    _common(rebuild)
    rebuild.add_argument("--user", default=None, help="only this user (default: every user)")
    rebuild.add_argument("--backend", choices=("sqlite", "tantivy"), default="sqlite")
    rebuild.add_argument(
        "--tokenizer",
        default=None,
        help="SQLite FTS5 tokenizer of the stored terms (default: ascii; keep it)",
    )
    rebuild.set_defaults(handler=sessions_command)

    find = sub.add_parser("search", help="search the messages of a user's sessions")
    find.add_argument("query", help="words to look for")
    _common(find)
    find.add_argument("--user", default="default", help="user id (default: default)")
    find.add_argument("--match", choices=("phrase", "all", "any"), default="phrase")
    find.add_argument("--limit", type=int, default=10, help="most hits (default: 10)")
    find.add_argument("--backend", choices=("sqlite", "tantivy"), default="sqlite")
    find.add_argument("--tokenizer", default=None, help="as given to reindex")
    find.set_defaults(handler=sessions_command)


def sessions_command(args: argparse.Namespace, console: Console) -> int:
    if not Path(args.workspace or ".").is_dir():
        console.print(f"[red]no workspace at {escape(str(args.workspace))}[/]")
        return 2
    try:
        root = runtime_root(args.workspace, args.data_dir)
    except ConfigError as exc:
        console.print(str(exc), style="red", markup=False)
        return 2
    if args.command == "search" and not 1 <= args.limit <= 200:
        console.print("[red]--limit must be between 1 and 200[/]")
        return 2
    if args.command == "sessions" and args.limit < 1:
        console.print("[red]--limit must be at least 1[/]")
        return 2
    if args.command == "search":
        try:
            query_words(args.query)
        except ValueError as exc:
            console.print(f"[red]{escape(str(exc))}[/]")
            return 2
    if not (root / Workspace.AGENTS_DIR / args.agent).is_dir():
        console.print(
            f"no session logs of agent {escape(args.agent)!r} in {escape(str(root.resolve()))}"
        )
        return 1
    if args.command == "sessions":
        store = JsonlSessionLogStore(root.resolve() / Workspace.AGENTS_DIR)
        return asyncio.run(list_sessions(store, args.agent, args.user, args.limit, console))
    try:
        log = open_log(root, args.backend, args.tokenizer)
    except ImportError as exc:
        console.print(f"[red]{escape(str(exc))}[/]")
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


async def list_sessions(
    store: JsonlSessionLogStore, agent: str, user: str, limit: int, console: Console
) -> int:
    found = await store.sessions(agent, user)
    if not found:
        console.print(f"no sessions of user {escape(user)!r} with agent {escape(agent)!r}")
        return 1
    table = Table(title=f"sessions of {user} with {agent}", title_justify="left")
    table.add_column("session", no_wrap=True)
    table.add_column("last written", no_wrap=True)
    table.add_column("size", justify="right", no_wrap=True)
    for info in found[:limit]:
        when = datetime.fromtimestamp(info.updated_at).strftime("%Y-%m-%d %H:%M")
        table.add_row(escape(info.session_id), when, f"{info.size_bytes / 1024:,.1f} KiB")
    console.print(table)
    if len(found) > limit:
        console.print(f"[dim]… and {len(found) - limit} older[/]")
    console.print(
        f"[dim]continue one with: harnessed run --session {escape(found[0].session_id)} '…'[/]"
    )
    return 0


def open_log(workspace: Path, backend: str, tokenizer: str | None = None) -> IndexedSessionLogStore:
    """The indexed session log of a local workspace with the chosen index backend."""
    root = workspace.resolve() / Workspace.AGENTS_DIR
    index: SearchIndex = (
        TantivySearchIndex(root)
        if backend == "tantivy"
        else SqliteSearchIndex(root, tokenizer=tokenizer or DEFAULT_TOKENIZER)
    )
    return IndexedSessionLogStore(JsonlSessionLogStore(root), index)


async def reindex(
    log: IndexedSessionLogStore, agent: str, user: str | None, console: Console
) -> int:
    users = [user] if user is not None else await log.users(agent)
    if not users:
        console.print(f"no session logs of agent {escape(agent)!r} in this workspace")
        await log.close()
        return 1
    started = time.perf_counter()
    total = 0
    for name in users:
        count = await log.rebuild(agent, name)
        total += count
        console.print(f"user {escape(name)}: {count:,} message(s) indexed")
    await log.close()
    seconds = time.perf_counter() - started
    console.print(
        f"[green]done:[/] {total:,} message(s) of {len(users)} user(s) in {seconds:.1f} s"
    )
    return 0


async def search(
    log: IndexedSessionLogStore,
    agent: str,
    user: str,
    query: str,
    *,
    limit: int,
    match: MatchMode,
    console: Console,
) -> int:
    try:
        hits = await log.search(agent, user, query, max_results=limit, match=match)
    except ValueError as exc:
        console.print(f"[red]{escape(str(exc))}[/]")
        return 2
    finally:
        await log.close()
    if not hits:
        console.print(f"no message of user {escape(user)!r} matches {escape(query)!r}")
        return 1
    for hit in hits:
        who = f"{hit.role} {hit.name}" if hit.name else hit.role
        head = f"[bold]{escape(hit.session_id)}#{hit.seq}[/] [dim]{hit.timestamp[:19]} {who}[/]"
        console.print(f"{head}  {escape(snippet(hit.text, query, 200))}")
    return 0
