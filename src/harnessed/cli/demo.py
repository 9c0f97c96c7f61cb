"""``harnessed demo``: a scripted model fixes a real bug with the built-in tools.

The model is a :class:`~harnessed.models.ScriptedModel` (no API key needed) whose next move is
decided from what the tools actually returned; the tools are harnessed's own file tools and
``execute``, which really list, read and edit files and really run the project's tests.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from harnessed.models.base import ModelRequest
from harnessed.models.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.sandbox import BubblewrapSandbox, HostSandbox, Sandbox

__all__ = [
    "DEMO_TASK",
    "demo_model",
    "demo_sandbox",
    "register",
    "respond_fixer",
    "write_demo_project",
]

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


def _last_results(request: ModelRequest) -> list[str]:
    results: list[str] = []
    for message in reversed(request.messages):
        if message.role != "tool":
            break
        results.insert(0, message.text)
    return results


def _run_tests() -> ScriptedToolCall:
    return ScriptedToolCall("execute", {"command": f"{sys.executable} test_calc.py", "timeout": 60})


def _passed(output: str) -> bool:
    return "exit code 0" in output and "Traceback" not in output


def respond_fixer(request: ModelRequest) -> ScriptedResponse:
    """Choose the next move from the conversation so far (a tiny, honest state machine)."""
    steps = sum(1 for m in request.messages if m.role == "assistant")
    last = _last_results(request)
    if steps == 0:
        return ScriptedResponse(
            "Let me look at the project first.", [ScriptedToolCall("list_files", {"path": "."})]
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
        return ScriptedResponse("Running the tests to see the failure.", [_run_tests()])
    if steps == 3:
        if last and _passed(last[0]):
            return ScriptedResponse("The tests already pass; there is nothing to fix.")
        return ScriptedResponse(
            "`mean` divides by `len(values) - 1`, which is the sample-variance denominator, "
            "not the mean's. Fixing it.",
            [ScriptedToolCall("edit_file", {"path": "calc.py", "old": _BUGGY, "new": _FIXED})],
        )
    if steps == 4:
        return ScriptedResponse("Re-running the tests.", [_run_tests()])
    outcome = last[0] if last else "(no test output)"
    verdict = "pass" if _passed(outcome) else "still fail"
    return ScriptedResponse(
        f"Done. The bug was an off-by-one denominator in `mean`; after the fix the tests "
        f"{verdict}:\n\n{outcome}"
    )


def demo_model() -> ScriptedModel:
    """The scripted model that drives the demo (reports a 32k window like a small model)."""
    return ScriptedModel(
        name="scripted-demo", context_window=32_000, responder=respond_fixer, delay=0.15
    )


def register(sub: Any) -> None:
    demo = sub.add_parser("demo", help="a scripted agent fixes a bug with real tools (no API key)")
    demo.add_argument("--workspace", default=None, help="directory for the demo (default: temp)")
    demo.add_argument(
        "--subagents", action="store_true", help="a reviewer sub-agent checks the fix"
    )
    demo.set_defaults(handler=demo_command)


def demo_command(args: argparse.Namespace, console: Console) -> int:
    from harnessed.agent import HarnessAgent
    from harnessed.cli.approvals import TerminalApprover
    from harnessed.cli.demo_review import review_demo_model, write_reviewer
    from harnessed.cli.render import EventPrinter
    from harnessed.cli.run import EXIT_CODES, stream_run
    from harnessed.runtime import RuntimeContext
    from harnessed.subagents import Subagents

    console.print(
        "[bold]harnessed demo[/] — a [italic]scripted[/] model (no API key, no network) drives "
        "real tools in a throw-away workspace.\n"
    )
    with tempfile.TemporaryDirectory(prefix="harnessed-demo-") as tmp:
        root = Path(args.workspace) if args.workspace else Path(tmp)
        write_demo_project(root)
        if args.subagents:
            write_reviewer(root)
        console.print(f"workspace: {root}\ntask: {DEMO_TASK}\n", markup=False, highlight=False)
        agent = HarnessAgent(
            "demo",
            review_demo_model() if args.subagents else demo_model(),
            sys_prompt="You fix bugs in small Python projects. Verify every fix by running tests.",
            workspace=root,
            capabilities=[Subagents()] if args.subagents else [],
            shell=demo_sandbox(),
        )

        async def go() -> str:
            try:
                return await stream_run(
                    agent,
                    DEMO_TASK,
                    RuntimeContext("demo-user"),
                    EventPrinter(console),
                    TerminalApprover(console),
                )
            finally:
                await agent.close()

        status = asyncio.run(go())
    return EXIT_CODES.get(status, 1)


def demo_sandbox() -> Sandbox:
    """Bubblewrap with this Python interpreter visible (the demo runs its tests with it); on a
    machine without a usable bubblewrap, the host — the demo's commands are its own script,
    run in a throw-away directory."""
    sandbox = BubblewrapSandbox(read_only_paths=tuple({sys.base_prefix, sys.prefix}))
    return sandbox if sandbox.unavailable_reason() is None else HostSandbox()
