"""The run's event inbox: FIFO order, and a wait that ends with the next event or a wake."""

from __future__ import annotations

import asyncio

from harnessed.run.inbox import EventInbox


async def test_events_come_out_in_order_and_a_wait_returns_at_once_when_one_is_queued():
    inbox: EventInbox[int] = EventInbox()
    for i in range(3):
        inbox.put_nowait(i)
    await asyncio.wait_for(inbox.wait(), 1)
    assert [inbox.get_nowait() for _ in range(3)] == [0, 1, 2]
    assert inbox.empty()


async def test_a_wait_ends_with_the_next_event_or_a_wake():
    inbox: EventInbox[str] = EventInbox()
    waiting = asyncio.create_task(inbox.wait())
    await asyncio.sleep(0.01)
    assert not waiting.done()
    inbox.put_nowait("tool result")
    await asyncio.wait_for(waiting, 1)
    assert inbox.get_nowait() == "tool result"

    work = asyncio.create_task(asyncio.sleep(0.01))
    work.add_done_callback(inbox.wake)  # the work beside the wait ended
    await asyncio.wait_for(inbox.wait(), 1)
    assert work.done() and inbox.empty()


async def test_a_cancelled_wait_leaves_the_inbox_usable():
    inbox: EventInbox[int] = EventInbox()
    waiting = asyncio.create_task(inbox.wait())
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    inbox.wake()  # nobody waits: nothing happens
    inbox.put_nowait(7)
    await asyncio.wait_for(inbox.wait(), 1)
    assert inbox.get_nowait() == 7
