"""Cooperative time slicing: runs that checkpoint let other work on the loop go first once
they have used up a slice, take turns in order, and lose nothing when cancelled."""

from __future__ import annotations

import asyncio
import gc
import itertools
import math
import time
import weakref
from collections.abc import Iterator

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models.scripted import ScriptedModel
from harnessed.run import DEFAULT_TIME_SLICE, checkpoint, fair, set_time_slice, time_slice


@pytest.fixture(autouse=True)
def default_slice() -> Iterator[None]:
    yield
    set_time_slice(DEFAULT_TIME_SLICE)


def busy(seconds: float) -> None:
    """Hold the event loop (CPU work between two checkpoints)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def steps_before_outside_work(runs: int, step: float) -> int:
    """How many run steps happen between an outside callback being scheduled (a request
    read from a socket) and it running, while ``runs`` runs each hold the loop for
    ``step`` seconds between checkpoints."""
    done = 0
    outside: list[int] = []

    async def run() -> None:
        nonlocal done
        for _ in range(10):
            await asyncio.sleep(0)  # waits for something (the model, a file write)
            await checkpoint()
            busy(step)
            done += 1

    tasks = [asyncio.create_task(run()) for _ in range(runs)]
    await asyncio.sleep(0)  # every run is under way
    loop = asyncio.get_running_loop()
    started = done
    loop.call_soon(lambda: outside.append(done - started))
    await asyncio.gather(*tasks)
    return outside[0]


async def test_outside_work_waits_for_a_few_run_steps_not_for_every_run() -> None:
    fair = await steps_before_outside_work(runs=100, step=0.001)
    set_time_slice(None)
    unfair = await steps_before_outside_work(runs=100, step=0.001)
    assert unfair >= 99  # plain asyncio: the callback waits for a step of every run
    assert fair <= 25  # a slice of 2 ms lets a handful of 1 ms steps through per pass


async def largest_lead(runs: int, steps: int) -> int:
    """How far the run furthest ahead got beyond the one furthest behind, in the middle of
    ``runs`` runs of ``steps`` half-millisecond steps each (all must finish)."""
    progress = dict.fromkeys(range(runs), 0)
    lead: list[int] = []

    async def run(index: int) -> None:
        for _ in range(steps):
            await checkpoint()
            busy(0.0005)
            progress[index] += 1
            lead.append(max(progress.values()) - min(progress.values()))

    await asyncio.wait_for(asyncio.gather(*(run(i) for i in range(runs))), 30)
    assert set(progress.values()) == {steps}
    return max(lead[len(lead) // 4 : -len(lead) // 4])


async def test_runs_take_turns_in_order_and_all_finish() -> None:
    # a run goes on while the slice lasts (2 ms: about four steps), then joins the line
    assert await largest_lead(20, 30) <= 6
    set_time_slice(None)
    assert await largest_lead(20, 30) == 30  # without checkpoints: one run after another


async def test_a_cancelled_run_in_line_does_not_hold_up_the_others() -> None:
    first_in_line = asyncio.Event()

    async def hog() -> None:
        await checkpoint()
        busy(0.01)  # uses up the slice: the next checkpoints wait in line

    async def waiter() -> None:
        first_in_line.set()
        await checkpoint()
        await asyncio.sleep(3600)

    await asyncio.create_task(hog())
    cancelled = asyncio.create_task(waiter())
    await first_in_line.wait()
    behind = asyncio.create_task(checkpoint())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.wait_for(behind, 1)
    with pytest.raises(asyncio.CancelledError):
        await cancelled


async def test_a_run_cancelled_after_its_turn_came_passes_the_turn_on() -> None:
    async def hog() -> None:
        await checkpoint()
        busy(0.01)

    await asyncio.create_task(hog())
    waiters = [asyncio.create_task(checkpoint()) for _ in range(40)]
    await asyncio.sleep(0)  # all in line now
    await asyncio.sleep(0)  # the first batch was let through; cancel them before they run
    for task in waiters[:20]:
        task.cancel()
    await asyncio.wait_for(asyncio.gather(*waiters[20:]), 2)


async def test_with_checkpoints_off_a_checkpoint_never_suspends() -> None:
    set_time_slice(None)
    assert time_slice() is None
    ran: list[bool] = []
    asyncio.get_running_loop().call_soon(ran.append, True)
    for _ in range(1000):
        await checkpoint()
    busy(0.005)
    await checkpoint()
    assert ran == []  # nothing else ran: no checkpoint gave the loop up


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, "2ms", True])
def test_a_bad_time_slice_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="time slice"):
        set_time_slice(bad)  # type: ignore[arg-type]
    assert time_slice() == DEFAULT_TIME_SLICE


async def test_concurrent_agent_runs_stream_in_turns() -> None:
    """Two calls on one loop whose model streams without pausing: with checkpoints their
    text arrives interleaved; without, one call's whole stream comes first."""

    def slow_reply(request: object) -> str:
        return " ".join(f"word{i}" for i in range(200))

    async def order() -> list[str]:
        agent = HarnessAgent("fair", ScriptedModel(responder=slow_reply, chunk_size=4))
        seen: list[str] = []

        async def one(session: str) -> None:
            async for event in agent.stream_events("hello", RuntimeContext(session_id=session)):
                if event.type == "text_delta":
                    busy(0.0005)  # a consumer that does a little with each piece
                    seen.append(session)

        await asyncio.gather(one("a"), one("b"))
        await agent.close()
        return seen

    set_time_slice(0.001)
    fair = await order()
    set_time_slice(None)
    plain = await order()
    switches = sum(x != y for x, y in itertools.pairwise(fair))
    assert switches >= 10
    assert sum(x != y for x, y in itertools.pairwise(plain)) <= 1


def test_an_event_loop_that_ran_checkpoints_is_freed_when_dropped() -> None:
    loop = asyncio.new_event_loop()
    loop.run_until_complete(checkpoint())
    dropped = weakref.ref(loop)
    loop.close()
    del loop
    gc.collect()
    assert dropped() is None  # nothing of the checkpoint line keeps it


async def test_a_run_cancelled_while_waiting_in_line_logs_a_cancelled_end() -> None:
    set_time_slice(0.001)
    agent = HarnessAgent("a", ScriptedModel(["hello there, this is a reply"], chunk_size=2))
    ctx = RuntimeContext("u", "s")
    seen: list[str] = []

    async def consume() -> None:
        async for event in agent.stream_events("go", ctx):
            seen.append(event.type)
            busy(0.003)  # each event uses up the slice: the next checkpoint waits in line

    task = asyncio.create_task(consume())
    share = None
    while share is None or not (share.queue or share.front):
        await asyncio.sleep(0)
        share = fair._shares.get(asyncio.get_running_loop())
        assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    records = [(r.type, r.payload.get("status")) for r in await agent.session_log(ctx)]
    assert records[-1] == ("run/end", "cancelled")
    assert ("run/end", "closed") not in records
