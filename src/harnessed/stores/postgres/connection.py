"""``PostgresStore``: one PostgreSQL database (and schema) shared by many app servers.

The store owns a connection pool per event loop (psycopg 3's ``AsyncConnectionPool``), so one
agent object keeps working across ``asyncio.run`` calls. On first use it checks the schema
version and, with ``migrate="auto"`` (the default), applies missing migrations; with
``migrate="check"`` it refuses to run on an old schema and says to run ``harnessed db upgrade``.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

from harnessed.stores.postgres.migrations import SCHEMA_VERSION, applied_version, upgrade

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

    from harnessed.stores.postgres.feed import PostgresTurnFeed
    from harnessed.stores.postgres.gate import PostgresTurnGate
    from harnessed.stores.postgres.log import PostgresSessionLogStore
    from harnessed.stores.postgres.search import PostgresSearchIndex
    from harnessed.stores.postgres.state import PostgresStateStore

__all__ = ["PostgresStore", "Purpose", "is_postgres_url"]

Purpose: TypeAlias = Literal["data", "leases", "renewals"]
"""Which pool a connection comes from (see :meth:`PostgresStore.connection`)."""

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def is_postgres_url(value: object) -> bool:
    """Whether ``value`` is a ``postgresql://`` / ``postgres://`` connection URL."""
    return isinstance(value, str) and value.startswith(("postgresql://", "postgres://"))


@dataclass(eq=False)
class PostgresStore:
    """Session logs, search and agent states in one PostgreSQL database.

    Args:
        url: A libpq connection string or URL (``postgresql://user@host:5432/db``).
        schema: The schema the tables live in (created when missing); lets several
            deployments, or test runs, share one database.
        min_size: Connections each pool keeps open.
        max_size: The most connections a pool opens.
        migrate: ``"auto"`` applies missing migrations on first use; ``"check"`` only checks
            and raises when the schema is behind (run ``harnessed db upgrade`` then).
        durable: ``True`` (the default): an append returns once the database flushed it to
            disk. ``False`` sets ``synchronous_commit=off`` for this store's connections: appends
            return before the flush (several times faster on slow disks); a crash of the
            *database server* may lose the last fraction of a second of commits, never corrupt
            or reorder them.
    """

    url: str
    schema: str = "public"
    min_size: int = 1
    max_size: int = 10
    migrate: Literal["auto", "check"] = "auto"
    durable: bool = True
    _pools: dict[tuple[asyncio.AbstractEventLoop, Purpose], AsyncConnectionPool[Any]] = field(
        default_factory=dict, init=False, repr=False
    )
    _opening: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False
    )
    _checked: bool = field(default=False, init=False, repr=False)
    _feed: PostgresTurnFeed | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.url, str) or not self.url.strip():
            raise ValueError("PostgresStore url must be a non-empty connection string")
        if not isinstance(self.schema, str) or not _SCHEMA_NAME.fullmatch(self.schema):
            raise ValueError(
                "PostgresStore schema must be lower-case letters, digits and '_' "
                f"(at most 63, not starting with a digit), got {self.schema!r}"
            )
        if not isinstance(self.min_size, int) or self.min_size < 0:
            raise ValueError(f"PostgresStore min_size must be >= 0, got {self.min_size!r}")
        if not isinstance(self.max_size, int) or self.max_size < max(1, self.min_size):
            raise ValueError(
                f"PostgresStore max_size must be >= max(1, min_size), got {self.max_size!r}"
            )
        if not isinstance(self.durable, bool):
            raise ValueError(f"PostgresStore durable must be True or False, got {self.durable!r}")
        if self.migrate not in ("auto", "check"):
            raise ValueError(
                f"PostgresStore migrate must be 'auto' or 'check', got {self.migrate!r}"
            )

    # ------------------------------------------------------------------ parts
    def session_log(self) -> PostgresSessionLogStore:
        """The session log store (a :class:`~harnessed.log.SessionLogStore`)."""
        from harnessed.stores.postgres.log import PostgresSessionLogStore

        return PostgresSessionLogStore(self)

    def search_index(self) -> PostgresSearchIndex:
        """The search index over the session log (same database, indexed on append)."""
        from harnessed.stores.postgres.search import PostgresSearchIndex

        return PostgresSearchIndex(self)

    def state_store(self) -> PostgresStateStore:
        """The agent state store (an :class:`~harnessed.state.AgentStateStore`)."""
        from harnessed.stores.postgres.state import PostgresStateStore

        return PostgresStateStore(self)

    def turn_gate(self, *, lease_seconds: float | None = None) -> PostgresTurnGate:
        """The turn gate (a :class:`~harnessed.sessions.TurnGate`): one turn per session at a
        time across every app server using this database."""
        from harnessed.stores.postgres.gate import PostgresTurnGate

        if lease_seconds is None:
            return PostgresTurnGate(self)
        return PostgresTurnGate(self, lease_seconds=lease_seconds)

    def turn_feed(self) -> PostgresTurnFeed:
        """The running turns and their events, readable by every server (a
        :class:`~harnessed.turns.feed.TurnFeed`; one per store)."""
        if self._feed is None:
            from harnessed.stores.postgres.feed import PostgresTurnFeed

            self._feed = PostgresTurnFeed(self)
        return self._feed

    # ------------------------------------------------------------ connections
    @asynccontextmanager
    async def connection(self, purpose: Purpose = "data") -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection of the running event loop, schema checked.

        The turn gate takes its connections from small pools of their own (``"leases"`` to
        take and give back, ``"renewals"`` to renew), so a renewal never waits behind busy
        sessions or sessions waiting for their turn (a late renewal loses the turn).
        """
        pool = await self._pool(purpose)
        async with pool.connection() as conn:
            yield conn

    async def upgrade(self) -> list[int]:
        """Apply missing migrations now; returns the versions applied."""
        import psycopg

        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            return await upgrade(conn, self.schema)

    async def schema_version(self) -> int:
        """The migration version the database is at (0 = empty)."""
        import psycopg

        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            await conn.execute(f"SET search_path TO {self.schema}".encode())
            return await applied_version(conn)

    async def close(self) -> None:
        """Close the pools of the running event loop (pools of ended loops are dropped)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - close() is a coroutine
            return
        if self._feed is not None:
            await self._feed.close()
        for purpose in get_args(Purpose):
            pool = self._pools.pop((loop, purpose), None)
            if pool is not None:
                await pool.close()

    async def _pool(self, purpose: Purpose) -> AsyncConnectionPool[Any]:
        key = (asyncio.get_running_loop(), purpose)
        pool = self._pools.get(key)
        if pool is not None:
            return pool
        lock = self._opening.setdefault(key[0], asyncio.Lock())
        async with lock:  # the first task of a loop opens its pool, the others wait for it
            pool = self._pools.get(key)
            if pool is None:
                self._forget_ended_loops()
                pool = await self._open_pool(purpose)
                self._pools[key] = pool
        return pool

    def _forget_ended_loops(self) -> None:
        # A pool holds its loop (its worker tasks), so it must be dropped explicitly; once
        # unreferenced its connections are closed by the garbage collector.
        for ended in [key for key in self._pools if key[0].is_closed()]:
            del self._pools[ended]
            self._opening.pop(ended[0], None)

    async def _open_pool(self, purpose: Purpose) -> AsyncConnectionPool[Any]:
        try:
            from psycopg_pool import AsyncConnectionPool
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise ImportError(
                "the PostgreSQL store needs psycopg and psycopg_pool: "
                "pip install 'harnessed[postgres]'"
            ) from exc
        if not self._checked:
            await self._check_schema()
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self.url,
            min_size=self.min_size if purpose == "data" else min(1, self.min_size),
            max_size=self.max_size if purpose == "data" else 2,
            kwargs={"autocommit": True, "options": self._options()},
            open=False,
            name=f"harnessed-{self.schema}-{purpose}",
        )
        await pool.open(wait=True, timeout=30)
        return pool

    def _options(self) -> str:
        options = f"-c search_path={self.schema}"
        if not self.durable:
            options += " -c synchronous_commit=off"
        return options

    async def _check_schema(self) -> None:
        if self.migrate == "auto":
            await self.upgrade()
        else:
            version = await self.schema_version()
            if version < SCHEMA_VERSION:
                raise RuntimeError(
                    f"the PostgreSQL schema {self.schema!r} is at version {version}, this "
                    f"harnessed needs {SCHEMA_VERSION}: run `harnessed db upgrade --url ...`"
                )
        self._checked = True
