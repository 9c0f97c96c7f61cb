"""The turn gate: one lease per session, busy errors, expiry and take-over."""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harnessed.sessions import (
    FileTurnGate,
    InMemoryTurnGate,
    LeaseLostError,
    SessionBusyError,
    TurnGate,
    TurnLease,
)
from harnessed.stores.postgres import PostgresTurnGate
from tests.support.postgres import postgres_store


@pytest.fixture(params=["file", "memory", "postgres"])
async def gate(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TurnGate]:
    if request.param == "file":
        yield FileTurnGate(tmp_path / "turns", lease_seconds=0.5, poll_interval=0.02)
    elif request.param == "memory":
        yield InMemoryTurnGate(lease_seconds=0.5, poll_interval=0.02)
    else:
        async for store in postgres_store():
            yield PostgresTurnGate(store, lease_seconds=0.5, poll_interval=0.02)


async def test_of_many_asking_at_once_exactly_one_gets_the_lease(gate: TurnGate) -> None:
    async def ask() -> TurnLease | None:
        try:
            return await gate.acquire("race", wait=False)
        except SessionBusyError:
            return None

    got = [lease for lease in await asyncio.gather(*(ask() for _ in range(20))) if lease]
    assert len(got) == 1
    await gate.release(got[0])
    again = await gate.acquire("race", wait=False)
    await gate.release(again)


async def test_one_lease_per_session(gate: TurnGate) -> None:
    lease = await gate.acquire("s")
    other = await gate.acquire("t", wait=False)  # other sessions are independent
    with pytest.raises(SessionBusyError, match="'s' is busy"):
        await gate.acquire("s", wait=False)
    with pytest.raises(SessionBusyError):
        await gate.acquire("s", timeout=0.05)
    waiter = asyncio.create_task(gate.acquire("s"))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await gate.release(lease)
    second = await asyncio.wait_for(waiter, 2)
    assert second.holder != lease.holder
    await gate.release(second)
    await gate.release(other)


async def test_an_unrenewed_lease_expires_and_its_renewal_fails(gate: TurnGate) -> None:
    lease = await gate.acquire("s")
    renewed = await gate.renew(lease)
    assert renewed.expires_at >= lease.expires_at
    await asyncio.sleep(0.6)
    taker = await gate.acquire("s", wait=False)
    with pytest.raises(LeaseLostError):
        await gate.renew(renewed)
    await gate.release(renewed)  # releasing a lost lease leaves the new holder alone
    with pytest.raises(SessionBusyError):
        await gate.acquire("s", wait=False)
    await gate.release(taker)


def test_bad_lease_length_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lease_seconds"):
        FileTurnGate(tmp_path, lease_seconds=0)
    with pytest.raises(ValueError, match="lease_seconds"):
        InMemoryTurnGate(lease_seconds=-1)


def test_a_torn_lease_file_counts_as_free(tmp_path: Path) -> None:
    gate = FileTurnGate(tmp_path)
    path = gate.path_for("s")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"holder": "x", "expi')
    lease = asyncio.run(gate.acquire("s", wait=False))
    assert lease.session == "s"


async def test_a_lease_file_locked_by_another_process_is_waited_for_off_the_loop(
    tmp_path: Path,
) -> None:
    """While another process holds a lease file's lock (here another open file, which flock
    treats alike), acquire, renew and release wait for it without stopping the event loop,
    and finish once the lock is let go."""
    gate = FileTurnGate(tmp_path / "turns", lease_seconds=5)
    lease = await gate.acquire("s")
    fd = os.open(gate.path_for("s"), os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        renewing = asyncio.create_task(gate.renew(lease))
        ticks = 0
        for _ in range(20):  # the loop keeps running while the renewal waits for the lock
            await asyncio.sleep(0.005)
            ticks += 1
        assert ticks == 20 and not renewing.done()
    finally:
        os.close(fd)  # lets the lock go
    renewed = await asyncio.wait_for(renewing, 5)
    assert renewed.holder == lease.holder and renewed.expires_at >= lease.expires_at
    await gate.release(renewed)
    again = await gate.acquire("s", wait=False)
    assert again.holder != lease.holder


async def test_lease_files_come_back_when_their_folder_is_removed(tmp_path: Path) -> None:
    gate = FileTurnGate(tmp_path / "turns")
    await gate.release(await gate.acquire("s"))
    shutil.rmtree(tmp_path / "turns")
    lease = await gate.acquire("s", wait=False)
    assert gate.path_for("s").exists() and lease.session == "s"
