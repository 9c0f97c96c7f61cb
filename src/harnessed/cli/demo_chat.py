"""The demo agent of ``harnessed chat --demo`` and ``harnessed serve --demo``: the scripted
model of ``harnessed demo`` as a conversation partner, with no API key and no network.

Ask it to fix the bug (any message that mentions a bug, a fix or the tests) and it lists,
reads, edits and tests the demo project's files with the real tools, one turn at a time;
anything else gets a short scripted answer saying what it can do.
"""

from __future__ import annotations

import atexit
import dataclasses
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from harnessed.cli.demo import demo_sandbox, respond_fixer, write_demo_project
from harnessed.models.base import ModelRequest
from harnessed.models.scripted import ScriptedModel, ScriptedResponse

if TYPE_CHECKING:
    from harnessed.agent import HarnessAgent

__all__ = ["demo_chat_agent", "demo_chat_model", "respond_chat"]

_ASKS_FOR_A_FIX = ("bug", "fix", "test")


def _this_turn(request: ModelRequest) -> tuple[str, ModelRequest]:
    """The user's last message and the request cut to start at it."""
    messages = request.messages
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            cut = dataclasses.replace(request, messages=messages[index:], cache_points=())
            return messages[index].text, cut
    return "", request


def respond_chat(request: ModelRequest) -> ScriptedResponse:
    """Fix the demo bug when asked, else say what this demo does."""
    said, turn = _this_turn(request)
    if any(word in said.lower() for word in _ASKS_FOR_A_FIX):
        return respond_fixer(turn)
    return ScriptedResponse(
        "This is **harnessed's scripted demo model**: no API key, no network. The workspace "
        "holds a tiny Python project whose tests fail.\n\n"
        "* say *fix the bug* and I will list, read, edit and test its files with real tools;\n"
        "* `/steer TEXT` while I work, `Ctrl-C` to interrupt, `/resume` to go on."
    )


def demo_chat_model() -> ScriptedModel:
    return ScriptedModel(
        name="scripted-demo", context_window=32_000, responder=respond_chat, delay=0.05
    )


def demo_chat_agent(workspace: str | Path | None = None, name: str = "demo") -> HarnessAgent:
    """A demo agent on ``workspace`` (default: a temporary directory removed at exit), where
    the demo project is written unless it is there already."""
    from harnessed.agent import HarnessAgent

    if workspace is None:
        root = Path(tempfile.mkdtemp(prefix="harnessed-demo-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
    else:
        root = Path(workspace)
    if not (root / "calc.py").exists():
        write_demo_project(root)
    return HarnessAgent(
        name,
        demo_chat_model(),
        sys_prompt="You fix bugs in small Python projects. Verify every fix by running tests.",
        workspace=root,
        shell=demo_sandbox(),
        permission_mode="accept_edits",
    )
