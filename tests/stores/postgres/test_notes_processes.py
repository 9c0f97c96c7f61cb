"""Steering and interrupting a turn that runs in another app server, through PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from harnessed import HarnessAgent
from harnessed.models import ScriptedModel
from harnessed.stores.postgres import PostgresStore
from tests.support.postgres import URL, postgres_store
from tests.turns.test_notes_processes import Worker, steer_and_interrupt_from_here


@pytest.fixture
async def pg() -> AsyncIterator[PostgresStore]:
    async for store in postgres_store():
        await store.upgrade()  # before the other process starts
        yield store


async def test_a_turn_on_another_server_is_steered_and_interrupted(pg: PostgresStore) -> None:
    worker = await Worker.start(f"postgres:{URL}|{pg.schema}")
    agent = HarnessAgent("shared", ScriptedModel(), store=pg, memory=False)
    agent.turn_gate = pg.turn_gate()
    try:
        await steer_and_interrupt_from_here(worker, agent)
    finally:
        worker.kill()
        await agent.close()
