"""Many app servers, one PostgreSQL (BEHAVIOUR §14): 4 worker processes serve 50 sessions of 20
turns each, turns routed to random workers, one worker killed with ``kill -9`` mid-run and
started again. Every turn's input and reply is in the log exactly once, the state agrees with
the log, and turns of one session never overlap."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ScriptedModel
from harnessed.stores.postgres import PostgresStore
from tests.stores.postgres.pg_worker import answers
from tests.support.postgres import URL, postgres_store

ROOT = Path(__file__).resolve().parents[3]
WORKERS, SESSIONS, TURNS = 4, 50, 20
IN_FLIGHT_PER_SESSION = 2  # two turns of a session may be on two servers at once
KILL_AFTER = 300  # turns done before one worker is killed
LEASE_SECONDS = 10.0  # a killed server's sessions wait this long


class Worker:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.turns: set[str] = set()  # sent, not yet done

    @classmethod
    async def start(cls, schema: str) -> Worker:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.stores.postgres.pg_worker",
            URL, schema, str(LEASE_SECONDS),
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdout is not None
        assert (await asyncio.wait_for(proc.stdout.readline(), 60)).strip() == b"ready"
        return cls(proc)

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        session, index = text.rsplit("-", 1)
        self.proc.stdin.write(f"{session} {index}\n".encode())
        self.turns.add(text)


@pytest.fixture
async def pg() -> AsyncIterator[PostgresStore]:
    async for store in postgres_store():
        await store.upgrade()  # once, before four processes start
        yield store


async def test_four_servers_one_killed_every_turn_exactly_once(pg: PostgresStore) -> None:
    rng = random.Random(17)
    expected = [f"s{s:02d}-{t:02d}" for s in range(SESSIONS) for t in range(TURNS)]
    next_turn = {f"s{s:02d}": 0 for s in range(SESSIONS)}
    in_flight: Counter[str] = Counter()
    done: set[str] = set()
    finished: asyncio.Queue[tuple[int, str | None]] = asyncio.Queue()
    workers: list[Worker] = [await Worker.start(pg.schema) for _ in range(WORKERS)]
    readers: dict[int, asyncio.Task[None]] = {}

    async def read(slot: int, worker: Worker) -> None:
        assert worker.proc.stdout is not None
        while line := await worker.proc.stdout.readline():
            word, text = line.decode().split()
            assert word == "done"
            await finished.put((slot, text))
        await finished.put((slot, None))  # the process ended

    def route() -> None:
        for session, index in next_turn.items():
            while index < TURNS and in_flight[session] < IN_FLIGHT_PER_SESSION:
                text = f"{session}-{index:02d}"
                rng.choice(workers).send(text)
                in_flight[session] += 1
                index += 1
            next_turn[session] = index

    for slot, worker in enumerate(workers):
        readers[slot] = asyncio.create_task(read(slot, worker))
    route()
    killed = False
    try:
        while len(done) < len(expected):
            slot, text = await asyncio.wait_for(finished.get(), 120)
            if text is None:
                continue
            workers[slot].turns.discard(text)
            if text not in done:
                done.add(text)
                in_flight[text.rsplit("-", 1)[0]] -= 1
            if not killed and len(done) >= KILL_AFTER:
                killed = True
                victim = workers[0]
                assert victim.turns, "the killed worker had turns in flight"
                os.kill(victim.proc.pid, signal.SIGKILL)
                await victim.proc.wait()
                readers[0].cancel()
                workers[0] = await Worker.start(pg.schema)
                readers[0] = asyncio.create_task(read(0, workers[0]))
                for text in sorted(victim.turns):  # what it did not finish goes out again
                    rng.choice(workers).send(text)
            route()
    finally:
        for worker in workers:
            if worker.proc.returncode is None:
                assert worker.proc.stdin is not None
                worker.proc.stdin.close()
        for worker in workers:
            await asyncio.wait_for(worker.proc.wait(), 60)
    assert killed

    agent = HarnessAgent("app", ScriptedModel(), memory=False, store=pg)
    for s in range(SESSIONS):
        ctx = RuntimeContext("u", f"s{s:02d}")
        messages = await agent.session_messages(ctx)
        inputs = Counter(m.text for m in messages if m.role == "user")
        replies = Counter(answers(messages))
        wanted = [f"s{s:02d}-{t:02d}" for t in range(TURNS)]
        assert inputs == Counter(wanted), f"session s{s:02d}: inputs {inputs}"
        assert replies == Counter(wanted), f"s{s:02d}: replies {replies}"
        # turns never overlap: the records of one run are never interleaved with another's
        runs: list[str] = []
        for record in await agent.session_log(ctx):
            if record.run_id is not None and (not runs or runs[-1] != record.run_id):
                assert record.run_id not in runs, f"s{s:02d}: run {record.run_id} interleaved"
                runs.append(record.run_id)
        state = await agent.load_state(ctx)
        assert [m.id for m in state.history] == [m.id for m in messages]
    await agent.close()
