"""``harnessed reindex`` and ``harnessed search``: the session search index from the terminal.

``reindex`` rebuilds the full-text index of an agent's session logs in a local workspace (all
users, or one) from the JSONL files, which stay the truth; ``search`` runs a query the way the
``session_search`` tool does, for one user.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from harnessed.session.indexed import IndexedSessionLogStore
from harnessed.session.jsonl import JsonlSessionLogStore
from harnessed.session.search import MatchMode, SearchIndex, snippet
from harnessed.session.sqlite_index import DEFAULT_TOKENIZER, SqliteSearchIndex
from harnessed.session.tantivy_index import TantivySearchIndex
from harnessed.workspace.layout import Workspace

__all__ = ["open_log", "reindex", "search"]


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
