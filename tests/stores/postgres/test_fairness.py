"""Two app servers calling one session in a loop through PostgreSQL take turns: the turn gate
serves waiting turns first come, first served (see tests/turns/test_fairness.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harnessed import HarnessAgent
from harnessed.models import ScriptedModel
from harnessed.stores.postgres import PostgresStore
from tests.support.postgres import URL, postgres_store
from tests.turns.test_fairness import assert_served_in_turn, run_two_workers, turn_order


@pytest.fixture
async def pg() -> AsyncIterator[PostgresStore]:
    async for store in postgres_store():
        await store.upgrade()  # once, before the two processes start
        yield store


async def test_two_servers_calling_one_session_take_turns(
    pg: PostgresStore, tmp_path: Path
) -> None:
    await run_two_workers(f"postgres:{URL}|{pg.schema}", tmp_path / "events")
    agent = HarnessAgent("shared", ScriptedModel(), store=pg, memory=False)
    try:
        assert_served_in_turn(await turn_order(agent), tmp_path / "events")
    finally:
        await agent.close()
