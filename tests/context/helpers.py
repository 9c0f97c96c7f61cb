"""Shared helpers for the context compiler tests (BEHAVIOUR.md section 1)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harnessed import (
    ContextManifest,
    CustomEvent,
    Event,
    HarnessAgent,
    Msg,
    RuntimeContext,
    tool,
)
from harnessed.context import PrepareInfo
from harnessed.models import Model, ModelRequest


@tool(read_only=True)
def noop() -> str:
    """Does nothing (lets a scripted model take one more step)."""
    return "noop done"


def system_text(request: ModelRequest) -> str:
    first = request.messages[0]
    assert first.role == "system"
    return first.text


def context_message(request: ModelRequest) -> Msg | None:
    """The ``<HARNESS_CONTEXT>`` message of a prepared request, if any."""
    found = [m for m in request.messages if m.text.startswith("<HARNESS_CONTEXT>")]
    assert len(found) <= 1
    return found[0] if found else None


def context_text(request: ModelRequest) -> str:
    message = context_message(request)
    return message.text if message is not None else ""


def all_text(request: ModelRequest) -> str:
    return "\n".join(m.text for m in request.messages)


def non_context_text(request: ModelRequest) -> str:
    """Everything except the ``HARNESS_CONTEXT`` message."""
    ref = context_message(request)
    return "\n".join(m.text for m in request.messages if m is not ref)


async def collect_failing(
    agent: HarnessAgent, text: str, ctx: RuntimeContext | None = None
) -> tuple[list[Event], BaseException]:
    events: list[Event] = []
    try:
        async for event in agent.stream_events(text, ctx):
            events.append(event)
    except Exception as exc:
        return events, exc
    raise AssertionError("the call was expected to fail but it succeeded")


def builds(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The data of every ``context_build`` event, in order."""
    return [e.data for e in events if isinstance(e, CustomEvent) and e.name == "context_build"]


def info_for(
    agent: HarnessAgent | str,
    model: Model,
    *,
    call_id: str = "mc_test",
    purpose: str = "reasoning",
    ctx: RuntimeContext | None = None,
    iteration: int = 1,
) -> PrepareInfo:
    name = agent if isinstance(agent, str) else agent.name
    return PrepareInfo(
        agent_name=name,
        runtime=(ctx or RuntimeContext("u", "s")).resolved(name),
        model=model,
        model_call_id=call_id,
        iteration=iteration,
        purpose=purpose,  # type: ignore[arg-type]
    )


def manifest_json(manifest: ContextManifest) -> str:
    return json.dumps(manifest.to_dict(), ensure_ascii=False)
