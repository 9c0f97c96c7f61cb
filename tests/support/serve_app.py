"""The agent the multi-process tests serve: ``harnessed serve --agent
tests.support.serve_app:agent`` (or imported by a worker script).

Environment: ``SERVE_APP_SCHEMA`` (a PostgreSQL schema of the test server: the store) or
``SERVE_APP_WORKSPACE`` (a local workspace: the embedded default), and ``SERVE_APP_SIGNALS``,
a folder where the ``wait_for_signal`` tool leaves ``started-<label>`` and waits for
``release-<label>`` (the test controls when a running turn goes on).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from harnessed import HarnessAgent, tool
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel
from harnessed.wakeups import Wakeups, WakeupsConfig

SIGNALS = Path(os.environ.get("SERVE_APP_SIGNALS", "."))


@tool(read_only=True)
async def wait_for_signal(label: str) -> str:
    """Wait until the test releases this label."""
    (SIGNALS / f"started-{label}").touch()
    while not (SIGNALS / f"release-{label}").exists():
        await asyncio.sleep(0.02)
    return f"released {label}"


def respond(request: ModelRequest) -> ScriptedResponse:
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(text=f"All done after the tool said: {last.text}.")
    text = last.text
    if text.startswith("wait "):
        return ScriptedResponse(
            tool_calls=[ScriptedToolCall("wait_for_signal", {"label": text[5:]})]
        )
    if text.startswith("wake me "):
        return ScriptedResponse(
            tool_calls=[ScriptedToolCall("schedule_wakeup", json.loads(text[8:]))]
        )
    if text.startswith("[Wake-up "):
        return ScriptedResponse(text="woken: " + text.split("\n", 1)[1])
    return ScriptedResponse(text=f"You said: {text}")


def agent() -> HarnessAgent:
    schema = os.environ.get("SERVE_APP_SCHEMA")
    if schema:
        from harnessed.stores.postgres import PostgresStore
        from tests.support.postgres import URL

        where: dict[str, object] = {"store": PostgresStore(URL, schema=schema, migrate="check")}
    else:
        where = {"workspace": os.environ["SERVE_APP_WORKSPACE"]}
    return HarnessAgent(
        "served",
        ScriptedModel(responder=respond, chunk_size=5),
        tools=[wait_for_signal],
        capabilities=[Wakeups(WakeupsConfig(poll_seconds=0.1, claim_seconds=5.0))],
        shell=False,
        memory=False,
        **where,  # type: ignore[arg-type]
    )
