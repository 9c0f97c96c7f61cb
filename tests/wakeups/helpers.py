"""An agent whose scripted model schedules wake-ups when asked to, and a clock tests move."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harnessed import HarnessAgent
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel
from harnessed.wakeups import Wakeups, WakeupsConfig


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def respond(request: ModelRequest) -> ScriptedResponse:
    """``wake me <json args>`` calls schedule_wakeup with those arguments; a wake-up's turn
    answers ``woken: <note>``; after a tool result the model repeats it."""
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(text=f"tool said: {last.text}")
    text = last.text
    if text.startswith("wake me "):
        return ScriptedResponse(
            tool_calls=[ScriptedToolCall("schedule_wakeup", json.loads(text[8:]))]
        )
    if text.startswith("[Wake-up "):
        return ScriptedResponse(text="woken: " + text.split("\n", 1)[1])
    if text.startswith("cancel "):
        return ScriptedResponse(
            tool_calls=[ScriptedToolCall("cancel_wakeup", {"wakeup_id": text[7:]})]
        )
    if text == "list":
        return ScriptedResponse(tool_calls=[ScriptedToolCall("list_wakeups", {})])
    return ScriptedResponse(text=f"you said {text}")


def make_agent(
    workspace: Path | None, clock: Clock | None = None, name: str = "waker", **config: Any
) -> HarnessAgent:
    wakeups = Wakeups(WakeupsConfig(**config), clock=clock or Clock())
    return HarnessAgent(
        name,
        ScriptedModel(responder=respond),
        workspace=workspace,
        capabilities=[wakeups],
        shell=False,
        memory=False,
    )


def woken_notes(agent: HarnessAgent, messages: list[Any]) -> list[str]:
    return [
        m.text.split("\n", 1)[1] for m in messages if m.role == "user" and "wakeup" in m.metadata
    ]
