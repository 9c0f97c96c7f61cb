"""Fixtures shared by the turn gate's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harnessed.sessions import FileTurnGate, InMemoryTurnGate
from harnessed.stores.postgres import PostgresTurnGate
from tests.support.postgres import postgres_store


@pytest.fixture(params=["file", "memory", "postgres"])
async def gate(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """Each turn gate in turn, with short leases and polls."""
    if request.param == "file":
        yield FileTurnGate(tmp_path / "turns", lease_seconds=0.5, poll_interval=0.02)
    elif request.param == "memory":
        yield InMemoryTurnGate(lease_seconds=0.5, poll_interval=0.02)
    else:
        async for store in postgres_store():
            yield PostgresTurnGate(store, lease_seconds=0.5, poll_interval=0.02)
