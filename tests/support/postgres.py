"""PostgreSQL for tests: a fresh schema per test in the server the machine runs.

The URL comes from ``HARNESSED_TEST_POSTGRES_URL`` (default: the local server's ``test``
database). Without a reachable server the tests skip with one line saying how to enable them;
``.ci/run`` sets ``HARNESSED_REQUIRE_POSTGRES=1``, which turns that skip into a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import pytest

from harnessed.stores.postgres import PostgresStore

URL = os.environ.get("HARNESSED_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
REQUIRED = os.environ.get("HARNESSED_REQUIRE_POSTGRES") == "1"


def _reachable() -> str | None:
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install -e '.[dev]')"
    try:
        with psycopg.connect(URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # any failure to connect means: no server for the tests
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


_PROBLEM: str | bool | None = False


def require_postgres() -> None:
    """Skip (or fail, with HARNESSED_REQUIRE_POSTGRES=1) when the server is not there."""
    global _PROBLEM
    if _PROBLEM is False:
        _PROBLEM = _reachable()
    if isinstance(_PROBLEM, str):
        message = (
            f"PostgreSQL at {URL} is not usable ({_PROBLEM}); set HARNESSED_TEST_POSTGRES_URL "
            "to a server you can use"
        )
        if REQUIRED:
            pytest.fail(message + " (HARNESSED_REQUIRE_POSTGRES=1)")
        pytest.skip(message)


def new_schema() -> str:
    return "t_" + uuid.uuid4().hex[:16]


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


async def postgres_store(**options: object) -> AsyncIterator[PostgresStore]:
    """Yield a :class:`PostgresStore` on a schema of its own, dropped afterwards."""
    require_postgres()
    store = PostgresStore(URL, schema=new_schema(), **options)  # type: ignore[arg-type]
    try:
        yield store
    finally:
        await store.close()
        drop_schema(store.schema)
