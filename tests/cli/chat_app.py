"""An application module for the ``harnessed chat`` / ``serve`` tests: a scripted agent whose
workspace is $CHAT_TEST_WORKSPACE. 'slow …' starts a tool that takes a minute; 'deploy X'
calls a tool that asks for approval; 'ask' asks the user a question."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harnessed import HarnessAgent, tool
from harnessed.models import ModelRequest, ScriptedResponse, ScriptedToolCall
from harnessed.models.scripted import ScriptedModel
from harnessed.questions import AskUser


def respond(request: ModelRequest) -> ScriptedResponse:
    last = request.messages[-1]
    if last.role == "tool":
        return ScriptedResponse(text=f"Finished after: {last.text[:40]}")
    if last.text.startswith("deploy "):
        return ScriptedResponse(tool_calls=[ScriptedToolCall("deploy", {"target": last.text[7:]})])
    if last.text.startswith("ask"):
        question = {"question": "Which color?", "choices": ["red", "blue"]}
        return ScriptedResponse(tool_calls=[ScriptedToolCall("ask_user", question)])
    if last.text.startswith("slow"):
        return ScriptedResponse(tool_calls=[ScriptedToolCall("slow_job", {"label": last.text})])
    return ScriptedResponse(text=f"You said: {last.text}")


@tool(read_only=True)
async def slow_job(label: str) -> str:
    """Take a minute."""
    await asyncio.sleep(60)
    return f"finished {label}"


@tool
async def deploy(target: str) -> str:
    """Deploy to a target (changes things: asks first)."""
    return f"deployed to {target}"


def make_agent() -> HarnessAgent:
    return HarnessAgent(
        "chatty",
        ScriptedModel(responder=respond),
        workspace=os.environ["CHAT_TEST_WORKSPACE"],
        tools=[slow_job, deploy],
        capabilities=[AskUser()],
        permission_mode="default",
        shell=False,
        memory=False,
    )


ROOT = Path(__file__).resolve().parents[2]


def harnessed_process(
    workspace: Path, *args: str, env: dict[str, str] | None = None, **popen: Any
) -> subprocess.Popen[str]:
    """``harnessed ARGS`` in a new process, with this module's agent on ``workspace``."""
    full_env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
        "CHAT_TEST_WORKSPACE": str(workspace),
        **(env or {}),
    }
    code = "import sys; from harnessed.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )


def make_agent_when_released() -> HarnessAgent:
    """:func:`make_agent` once the file $CHAT_TEST_RELEASE exists (an agent slow to build)."""
    release = Path(os.environ["CHAT_TEST_RELEASE"])
    while not release.exists():
        time.sleep(0.01)
    return make_agent()
