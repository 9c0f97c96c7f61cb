"""The wake-up stores as rude peers use them: two processes (two store objects on one file or
database) claiming at once, a claimer that dies before settling, a settle after the claim was
lost, users racing for the last free place."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harnessed import RuntimeContext
from harnessed.stores.postgres import PostgresStore
from harnessed.wakeups import (
    MemoryWakeupStore,
    SqliteWakeupStore,
    Wakeup,
    WakeupDispatcher,
    WakeupLimitError,
    Wakeups,
    WakeupStore,
)
from harnessed.wakeups.postgres import PostgresWakeupStore
from tests.support.postgres import postgres_store
from tests.wakeups.helpers import Clock, make_agent, respond, woken_notes

NOW = 1_800_000_000.0


def wakeup(i: int, user: str = "alice", due: float = NOW) -> Wakeup:
    return Wakeup(f"wk_{i:04d}", "bot", user, f"s{i % 3}", f"note {i}", due, created_at=NOW)


@pytest.fixture
async def pg() -> AsyncIterator[PostgresStore]:
    async for store in postgres_store():
        yield store


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def two_stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[WakeupStore, WakeupStore]]:
    """Two store objects over the same wake-ups (as two processes have)."""
    if request.param == "memory":
        one = MemoryWakeupStore()
        yield one, one
    elif request.param == "sqlite":
        path = tmp_path / "wakeups.sqlite3"
        a, b = SqliteWakeupStore(path), SqliteWakeupStore(path)
        yield a, b
        await a.close()
        await b.close()
    else:
        async for store in postgres_store():
            other = PostgresStore(store.url, schema=store.schema)
            yield PostgresWakeupStore(store), PostgresWakeupStore(other)
            await other.close()


async def test_racing_claims_never_share_a_wakeup(
    two_stores: tuple[WakeupStore, WakeupStore],
) -> None:
    a, b = two_stores
    for i in range(60):
        await a.add(wakeup(i, user=f"u{i}"), max_per_user=5)
    await a.add(wakeup(999, due=NOW + 100), max_per_user=5)  # not due
    await a.add(Wakeup("wk_other", "another-agent", "x", "s", "n", NOW), max_per_user=5)

    async def claimer(store: WakeupStore, holder: str) -> list[str]:
        got: list[str] = []
        while batch := await store.claim({"bot"}, holder, NOW, 30.0, 7):
            got += [w.id for w in batch]
        return got

    results = await asyncio.gather(
        claimer(a, "A"), claimer(b, "B"), claimer(a, "C"), claimer(b, "D")
    )
    claimed = [i for r in results for i in r]
    assert sorted(claimed) == sorted(f"wk_{i:04d}" for i in range(60))  # all, each once
    assert await b.claim({"bot"}, "E", NOW + 29, 30.0, 100) == []  # claims still hold


async def test_a_claimer_that_dies_leaves_the_wakeup_to_another_after_its_claim(
    two_stores: tuple[WakeupStore, WakeupStore],
) -> None:
    a, b = two_stores
    await a.add(wakeup(1), max_per_user=5)
    [held] = await a.claim({"bot"}, "dead", NOW, 30.0, 10)
    assert await b.next_due({"bot"}) == NOW + 30  # not before its claim runs out
    [again] = await b.claim({"bot"}, "alive", NOW + 30, 30.0, 10)
    assert again.id == held.id
    assert not await a.settle(held, "dead", None)  # the dead one's late settle changes nothing
    assert await b.settle(again, "alive", NOW + 3600)  # a cron wake-up: due again, once more
    [moved] = await a.pending("bot", "alice")
    assert moved.due_at == NOW + 3600 and moved.fired == 1
    assert not await a.settle(again, "alive", None)  # that firing was settled already
    await b.release(moved, "nobody")
    assert await a.cancel("bot", "alice", "s0", moved.id) is None  # another session's
    assert (await a.cancel("bot", "alice", "s1", moved.id)) == moved
    assert await b.pending("bot", "alice") == []


async def test_users_racing_for_the_last_place_do_not_both_get_it(
    two_stores: tuple[WakeupStore, WakeupStore],
) -> None:
    a, b = two_stores
    results = await asyncio.gather(
        *[(a if i % 2 else b).add(wakeup(i), max_per_user=3) for i in range(10)],
        return_exceptions=True,
    )
    assert sum(r is None for r in results) == 3
    assert all(isinstance(r, WakeupLimitError) for r in results if r is not None)
    assert len(await a.pending("bot", "alice")) == 3


async def test_two_stores_setting_up_one_new_file_at_once_both_work(tmp_path: Path) -> None:
    # SQLite answers "database is locked" at once, without waiting, when two connections set
    # up a new file together; it happened in about 7 % of such races before the set-up retried
    for n in range(60):
        path = tmp_path / f"w{n}.sqlite3"
        a, b = SqliteWakeupStore(path), SqliteWakeupStore(path)
        await asyncio.gather(a.add(wakeup(1), max_per_user=5), b.add(wakeup(2), max_per_user=5))
        assert len(await a.pending("bot", "alice")) == 2


async def test_a_firing_taken_over_by_another_process_starts_no_second_turn(
    tmp_path: Path,
) -> None:
    """The first process submitted the woken turn, then hung past its claim: the second one
    claims the same firing and fires it again — the idempotency key in the session log gives
    back the turn already made."""
    clock = Clock(NOW)
    first, second = make_agent(tmp_path, clock), make_agent(tmp_path, clock)
    wakeups = first.capability(Wakeups)
    assert wakeups is not None
    ctx = RuntimeContext("alice", "s1")
    scheduled = await wakeups.schedule(ctx, "look again", after=60)
    clock.now += 60
    store = wakeups.store
    assert isinstance(store, SqliteWakeupStore)
    [claimed] = await store.claim({"waker"}, "hung", clock.now, 60.0, 5)
    from harnessed.wakeups import fire_wakeup

    turn = await fire_wakeup(first, claimed)  # ... and the process hangs here
    await turn.result()
    clock.now += 61
    [again] = await WakeupDispatcher([second], clock=clock).run_due()
    assert again.id == turn.id  # the same turn, not a new one
    notes = woken_notes(first, await second.session_messages(ctx))
    assert notes == ["look again"]
    assert await wakeups.pending(ctx) == [] and scheduled.id == claimed.id
    await first.close()
    await second.close()


async def test_an_agent_on_postgres_keeps_its_wakeups_there(pg: PostgresStore) -> None:
    clock = Clock(NOW)
    from harnessed import HarnessAgent
    from harnessed.models.scripted import ScriptedModel

    def make() -> HarnessAgent:
        return HarnessAgent(
            "bot",
            ScriptedModel(responder=respond),
            store=pg,
            capabilities=[Wakeups(clock=clock)],
            shell=False,
            memory=False,
        )

    one, two = make(), make()
    cap = one.capability(Wakeups)
    assert cap is not None and isinstance(cap.store, PostgresWakeupStore)
    ctx = RuntimeContext("alice", "s1")
    await cap.schedule(ctx, "from server one", after=5)
    clock.now += 5
    dispatchers = [WakeupDispatcher([one], clock=clock), WakeupDispatcher([two], clock=clock)]
    fired = await asyncio.gather(*[d.run_due() for d in dispatchers])
    turns = [t for batch in fired for t in batch]
    assert len(turns) == 1
    await turns[0].result()
    assert woken_notes(one, await two.session_messages(ctx)) == ["from server one"]
    for agent in (one, two):  # the turn's last feed write is done before it lets go
        await agent.session(ctx).wait_idle()
    await one.close()
    await two.close()
