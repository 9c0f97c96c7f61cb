"""``harnessed demo``: a scripted model fixes a real bug with real tools in a temporary workspace.

The model is a :class:`~harnessed.models.ScriptedModel` (no API key needed) whose next move is
decided from what the tools actually returned; the tools really list, read and edit files and
really run the project's tests in a subprocess.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from harnessed.models.base import ModelRequest
from harnessed.models.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.tools.base import Tool, ToolError
from harnessed.tools.context import ToolContext
from harnessed.tools.decorator import tool

__all__ = ["DEMO_TASK", "demo_model", "demo_tools", "write_demo_project"]

DEMO_TASK = "The tests in this project fail. Find the bug, fix it, and show that the tests pass."

_CALC = '''"""Small statistics helpers."""


def mean(values: list[float]) -> float:
    """Arithmetic mean of a non-empty list."""
    return sum(values) / (len(values) - 1)


def spread(values: list[float]) -> float:
    """Difference between the largest and the smallest value."""
    return max(values) - min(values)
'''

_TESTS = """from calc import mean, spread

assert spread([1, 5, 3]) == 4, "spread"
assert mean([2, 4, 6]) == 4, f"mean([2, 4, 6]) returned {mean([2, 4, 6])}, expected 4"
print("all 2 checks passed")
"""

_BUGGY = "return sum(values) / (len(values) - 1)"
_FIXED = "return sum(values) / len(values)"


def write_demo_project(root: Path) -> None:
    """Create the demo project (a module with a bug and its test script) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text(_CALC)
    (root / "test_calc.py").write_text(_TESTS)


def _inside(ctx: ToolContext, path: str) -> Path:
    if ctx.workspace is None:
        raise ToolError("this agent has no workspace")
    root = ctx.workspace.resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise ToolError(f"path {path!r} is outside the workspace")
    return target


@tool(read_only=True)
def list_files(ctx: ToolContext) -> str:
    """List the files of the workspace."""
    assert ctx.workspace is not None
    names = sorted(
        str(p.relative_to(ctx.workspace))
        for p in ctx.workspace.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.parts)
    )
    return "\n".join(names) or "(empty)"


@tool(read_only=True)
def read_file(path: str, ctx: ToolContext) -> str:
    """Read a text file of the workspace, with line numbers.

    Args:
        path: File path relative to the workspace.
    """
    target = _inside(ctx, path)
    if not target.is_file():
        raise ToolError(f"no such file: {path}")
    lines = target.read_text().splitlines()
    return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(lines, 1))


@tool
def edit_file(path: str, old: str, new: str, ctx: ToolContext) -> str:
    """Replace one exact occurrence of ``old`` with ``new`` in a file.

    Args:
        path: File path relative to the workspace.
        old: The exact text to replace; it must occur once.
        new: The replacement text.
    """
    target = _inside(ctx, path)
    text = target.read_text()
    count = text.count(old)
    if count != 1:
        raise ToolError(f"expected exactly one occurrence of the old text, found {count}")
    target.write_text(text.replace(old, new))
    return f"edited {path}"


@tool
async def run_tests(ctx: ToolContext) -> str:
    """Run the project's test script and report its output and exit code."""
    assert ctx.workspace is not None
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "test_calc.py",
        cwd=ctx.workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    text = out.decode(errors="replace").strip()
    return f"exit code {proc.returncode}\n{text}"


def demo_tools() -> list[Tool]:
    return [list_files, read_file, edit_file, run_tests]


def _last_results(request: ModelRequest) -> list[str]:
    results: list[str] = []
    for message in reversed(request.messages):
        if message.role != "tool":
            break
        results.insert(0, message.text)
    return results


def _respond(request: ModelRequest) -> ScriptedResponse:
    """Choose the next move from the conversation so far (a tiny, honest state machine)."""
    steps = sum(1 for m in request.messages if m.role == "assistant")
    last = _last_results(request)
    if steps == 0:
        return ScriptedResponse(
            "Let me look at the project first.", [ScriptedToolCall("list_files")]
        )
    if steps == 1:
        return ScriptedResponse(
            "I'll read the module and its tests side by side.",
            [
                ScriptedToolCall("read_file", {"path": "calc.py"}),
                ScriptedToolCall("read_file", {"path": "test_calc.py"}),
            ],
        )
    if steps == 2:
        return ScriptedResponse(
            "Running the tests to see the failure.", [ScriptedToolCall("run_tests")]
        )
    if steps == 3:
        if last and last[0].startswith("exit code 0"):
            return ScriptedResponse("The tests already pass; there is nothing to fix.")
        return ScriptedResponse(
            "`mean` divides by `len(values) - 1`, which is the sample-variance denominator, "
            "not the mean's. Fixing it.",
            [ScriptedToolCall("edit_file", {"path": "calc.py", "old": _BUGGY, "new": _FIXED})],
        )
    if steps == 4:
        return ScriptedResponse("Re-running the tests.", [ScriptedToolCall("run_tests")])
    outcome = last[0] if last else "(no test output)"
    verdict = "pass" if outcome.startswith("exit code 0") else "still fail"
    return ScriptedResponse(
        f"Done. The bug was an off-by-one denominator in `mean`; after the fix the tests "
        f"{verdict}:\n\n{outcome}"
    )


def demo_model() -> ScriptedModel:
    """The scripted model that drives the demo (reports a 32k window like a small model)."""
    return ScriptedModel(
        name="scripted-demo", context_window=32_000, responder=_respond, delay=0.15
    )
