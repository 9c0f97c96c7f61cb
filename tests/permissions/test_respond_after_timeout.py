"""respond() called by the stream's own consumer after confirmation_timeout has parked the step
(but before the consumer read on) waits for the session lock that the suspended stream holds:
a permanent hang."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from harnessed import HarnessAgent
from harnessed.events import AgentEndEvent, ConfirmationRequestEvent
from harnessed.models import ScriptedModel, ScriptedResponse
from harnessed.permissions import ConfirmationError
from tests.permissions.deployer import Deployer
from tests.support.fixtures import CTX, call


async def test_late_answer_from_the_consumer_does_not_hang() -> None:
    d = Deployer()
    model = ScriptedModel([ScriptedResponse(tool_calls=[call("deploy", "c1", target="x")]), "ok"])
    agent = HarnessAgent(
        "ops", model, tools=d.tools, permission_mode="default", confirmation_timeout=0.05
    )

    async def consume() -> list:
        events = []
        async for event in agent.stream_events("go", CTX):
            events.append(event)
            if isinstance(event, ConfirmationRequestEvent):
                await asyncio.sleep(0.2)  # the user takes a moment to click "approve"
                # an error naming the timeout is acceptable; a hang is not
                with contextlib.suppress(ConfirmationError):
                    await agent.respond(CTX, event.request_id, True)
        return events

    try:
        events = await asyncio.wait_for(consume(), timeout=3)
    except TimeoutError:
        pytest.fail(
            "stream_events + respond deadlocked (respond waits for the session lock "
            "held by the very stream it was called from)"
        )
    assert isinstance(events[-1], AgentEndEvent)
