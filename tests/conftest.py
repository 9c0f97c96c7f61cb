from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.http_server import LocalServer, serve


@pytest.fixture
def http_server() -> Iterator[LocalServer]:
    """A real HTTP server on 127.0.0.1 that answers with queued replies."""
    yield from serve()


@pytest.fixture
def schema() -> Iterator[str]:
    """A new schema on the test PostgreSQL server, dropped after the test."""
    from tests.support.postgres import drop_schema, new_schema, require_postgres

    require_postgres()
    name = new_schema()
    yield name
    drop_schema(name)
