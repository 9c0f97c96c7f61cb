"""RunResult from call(): reads like the reply, and says how the call ended."""

from __future__ import annotations

import asyncio
import warnings

from harnessed import HarnessAgent, RuntimeContext, tool
from harnessed.log import RecordType
from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall, Usage
from harnessed.output import RunResult

CTX = RuntimeContext("u", "s")


@tool
async def deploy(target: str) -> str:
    """Deploy to a target."""
    return f"deployed to {target}"


async def test_a_completed_call_reads_like_its_reply_and_carries_usage_and_ids() -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[ScriptedToolCall("deploy", {"target": "a"})], usage=Usage(10, 2)
            ),
            ScriptedResponse("done", usage=Usage(30, 5, cache_read_tokens=8)),
        ]
    )
    agent = HarnessAgent("r", model, tools=[deploy])
    result = await agent.call("ship", CTX)
    assert isinstance(result, RunResult)
    assert result.text == "done" and str(result) == "done"
    assert result.role == "assistant" and result.metadata["model"] == "scripted"
    assert result.id == result.message.id and result.content == result.message.content
    assert result.status == "completed" and result.completed
    assert result.output == "done"  # no output type: the text
    assert result.usage == Usage(40, 7, cache_read_tokens=8)
    assert result.steps == 2 and result.model_requests == 2
    assert result.cost_usd is None  # no price known: never a guessed 0
    records = await agent.session_log(CTX)
    user = next(r for r in records if r.message is not None and r.message.role == "user")
    assert result.turn_id == user.message.id  # type: ignore[union-attr]
    assert {r.turn_id for r in records if r.type == RecordType.RUN_END} == {result.turn_id}
    data = result.to_dict()
    assert data["status"] == "completed" and data["usage"]["input_tokens"] == 40
    assert data["message"]["id"] == result.id and data["output"] == "done"


async def test_pending_and_max_iters_end_with_their_status_and_no_output() -> None:
    model = ScriptedModel(
        [ScriptedResponse(tool_calls=[ScriptedToolCall("deploy", {"target": "prod"})])]
    )
    agent = HarnessAgent("p", model, tools=[deploy], permission_mode="default")
    result = await agent.call("ship", CTX)
    assert result.status == "pending" and result.output is None
    assert result.pending == tuple(r.request_id for r in await agent.pending_confirmations(CTX))
    assert "Waiting for your approval" in result.text

    looping = ScriptedModel(
        responder=lambda _: ScriptedResponse(
            tool_calls=[ScriptedToolCall("deploy", {"target": "x"})]
        )
    )
    limited = HarnessAgent("m", looping, tools=[deploy], max_iters=2)
    capped = await limited.call("loop", CTX)
    assert capped.status == "max_iters" and capped.steps == 2 and capped.output is None


def test_call_sync_works_inside_a_running_event_loop() -> None:
    agent = HarnessAgent("nb", ScriptedModel(["first", "second"]))

    async def notebook_cell() -> tuple[str, str]:
        # what Jupyter does: a loop is running in this thread while the cell calls call_sync
        first = agent.call_sync("hi", CTX)
        await asyncio.sleep(0)  # the loop still works afterwards
        second = agent.call_sync("again", CTX)
        return first.text, second.text

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        assert asyncio.run(notebook_cell()) == ("first", "second")


def test_call_sync_inside_a_loop_raises_the_calls_own_error() -> None:
    agent = HarnessAgent("nb", ScriptedModel([]))

    async def cell() -> str:
        try:
            agent.call_sync("hi", CTX)
        except Exception as exc:
            return type(exc).__name__
        return "no error"

    assert asyncio.run(cell()) == "ModelError"
