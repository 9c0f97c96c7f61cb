"""``harnessed db upgrade`` / ``harnessed db status``: the PostgreSQL schema of a shared store."""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from rich.console import Console

__all__ = ["register"]

_URL_ENV = "HARNESSED_DATABASE_URL"


def register(sub: Any) -> None:
    db = sub.add_parser(
        "db",
        help="create or migrate the PostgreSQL schema of a shared store",
        description="Versioned migrations of the PostgreSQL store. 'upgrade' applies the "
        "missing ones (safe to run from several servers at once); 'status' shows the version "
        "and exits with 3 when migrations are pending.",
    )
    actions = db.add_subparsers(dest="db_command", required=True)
    for name, text in (
        ("upgrade", "apply missing migrations"),
        ("status", "show the schema version and pending migrations"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument(
            "--url",
            default=os.environ.get(_URL_ENV),
            help=f"postgresql://user@host:port/database (default: ${_URL_ENV})",
        )
        action.add_argument("--schema", default="public", help="schema (default: %(default)s)")
        action.set_defaults(handler=_db)


def _db(args: argparse.Namespace, console: Console) -> int:
    if not args.url:
        console.print(
            f"give the database with --url or ${_URL_ENV}",
            style="red",
            markup=False,
            highlight=False,
        )
        return 2
    try:
        from harnessed.stores.postgres import PostgresStore

        store = PostgresStore(args.url, schema=args.schema)
    except (ValueError, ImportError) as exc:
        console.print(f"{exc}", style="red", markup=False, highlight=False)
        return 2
    try:
        if args.db_command == "upgrade":
            return asyncio.run(_upgrade(store, console))
        return asyncio.run(_status(store, console))
    except Exception as exc:  # connection refused, bad credentials, a newer schema ...
        console.print(
            f"database error: {type(exc).__name__}: {exc}",
            style="red",
            markup=False,
            highlight=False,
        )
        return 1


async def _upgrade(store: Any, console: Console) -> int:
    from harnessed.stores.postgres import SCHEMA_VERSION

    applied = await store.upgrade()
    if applied:
        console.print(
            f"applied migrations {', '.join(map(str, applied))} to {store.schema!r}",
            markup=False,
            highlight=False,
        )
    console.print(
        f"schema {store.schema!r} is at version {SCHEMA_VERSION} (current)",
        markup=False,
        highlight=False,
    )
    return 0


async def _status(store: Any, console: Console) -> int:
    from harnessed.stores.postgres import MIGRATIONS, SCHEMA_VERSION

    version = await store.schema_version()
    console.print(
        f"schema {store.schema!r}: version {version}, this harnessed needs {SCHEMA_VERSION}"
    )
    pending = [m for m in MIGRATIONS if m.version > version]
    for migration in pending:
        console.print(
            f"  pending {migration.version}: {migration.description}", markup=False, highlight=False
        )
    if version > SCHEMA_VERSION:
        console.print("[yellow]the schema is newer than this harnessed: upgrade harnessed[/]")
        return 3
    if pending:
        console.print("run `harnessed db upgrade` to apply them")
        return 3
    return 0
