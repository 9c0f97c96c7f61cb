"""An interrupt cuts a model stream that is waiting for its next chunk, and ends the turn
whatever the stream does with the cut (passes it on, swallows it, reports its own error) or
whatever cancels its task took before; a cancellation from outside stays a cancellation."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from harnessed import HarnessAgent, Msg, RuntimeContext
from harnessed.events import AgentEndEvent, TextDeltaEvent
from harnessed.models import ModelRequest
from harnessed.models.base import ModelEvent, ModelResponse, TextDelta, Usage
from harnessed.models.errors import ModelError
from harnessed.turns.control import TurnControl

CTX = RuntimeContext("u1", "s1")


class StubbornModel:
    """Streams a word, then waits; a cancelled wait is swallowed once and the stream goes
    on with another word (a provider client that retries on cancellation)."""

    name = "stubborn"
    context_window = None
    max_output_tokens = None

    def __init__(self, mode: str = "raise") -> None:
        self.mode = mode
        """What a cancelled wait does: ``raise`` it, ``swallow`` it once and go on, or
        ``wrap`` it in the client's own error."""
        self.waiting = asyncio.Event()
        self.swallowed = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("first ")
        try:
            self.waiting.set()
            await asyncio.sleep(3600)
        except asyncio.CancelledError as exc:
            if self.mode == "wrap":  # a client that reports the cut as its own error
                raise ModelError("the connection was aborted", provider="stubborn") from exc
            if self.mode == "raise":
                raise
            self.swallowed += 1
        yield TextDelta("second ")
        yield ModelResponse(
            message=Msg.assistant("first second"),
            usage=Usage(input_tokens=1, output_tokens=2),
            stop_reason="end_turn",
            model=self.name,
        )


async def run_until_waiting(
    agent: HarnessAgent, model: StubbornModel, control: TurnControl
) -> tuple[asyncio.Task[list[object]], list[object]]:
    seen: list[object] = []

    async def consume() -> list[object]:
        async for event in agent.stream_events("go", CTX, control=control):
            seen.append(event)
        return seen

    task = asyncio.create_task(consume())
    await asyncio.wait_for(model.waiting.wait(), 5)
    return task, seen


@pytest.mark.parametrize("mode", ["raise", "swallow", "wrap"])
async def test_an_interrupt_cuts_a_stream_waiting_for_its_next_chunk(mode: str) -> None:
    model = StubbornModel(mode)
    agent = HarnessAgent("stubborn", model)
    control = TurnControl()
    task, _ = await run_until_waiting(agent, model, control)
    control.interrupt()
    events = await asyncio.wait_for(task, 5)
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.status == "interrupted"
    assert model.swallowed == (mode == "swallow")
    texts = [e.text for e in events if isinstance(e, TextDeltaEvent)]
    assert texts == ["first "]  # what came after the cut is not shown
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0
    await asyncio.sleep(0.01)  # the run's task was not left with a cancel pending
    assert not task.cancelled()


async def test_a_cancel_from_outside_is_not_taken_for_an_interrupt() -> None:
    model = StubbornModel()
    agent = HarnessAgent("stubborn", model)
    control = TurnControl()
    task, seen = await run_until_waiting(agent, model, control)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not any(isinstance(e, AgentEndEvent) for e in seen)


async def test_an_interrupt_works_in_a_task_that_once_swallowed_a_cancel() -> None:
    model = StubbornModel()
    agent = HarnessAgent("stubborn", model)
    control = TurnControl()
    ends: list[str] = []

    async def consume() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(1)  # the task took the cancel and went on (cancelling() == 1)
        async for event in agent.stream_events("go", CTX, control=control):
            if isinstance(event, AgentEndEvent):
                ends.append(event.status)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(model.waiting.wait(), 5)
    control.interrupt()
    await asyncio.wait_for(task, 5)
    assert ends == ["interrupted"]
