"""``harnessed demo --subagents``: after the fix, a reviewer sub-agent checks it.

The reviewer is declared the way an application would: a workspace file ``subagents/reviewer.md``
(front matter + system prompt). It shares the demo's scripted model and uses the parent's real
``read_file`` and ``execute`` tools, so its verdict comes from the code and the test run.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harnessed.cli.demo import demo_model, respond_fixer
from harnessed.models.base import ModelRequest
from harnessed.models.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall

__all__ = ["REVIEWER_MD", "review_demo_model", "write_reviewer"]

_ROLE = "You review fixes before they are handed over."
REVIEWER_MD = f"""---
description: Reviews a finished fix - reads the changed code, runs the tests, approves or rejects.
tools: [read_file, execute]
max_iters: 4
---
{_ROLE} Read the code that changed and run the tests yourself; never trust a claim you did not
check. Answer with APPROVED or REJECTED and one sentence why.
"""


def write_reviewer(root: Path) -> None:
    (root / "subagents").mkdir(parents=True, exist_ok=True)
    (root / "subagents" / "reviewer.md").write_text(REVIEWER_MD)


def _system(request: ModelRequest) -> str:
    first = request.messages[0] if request.messages else None
    return first.text if first is not None and first.role == "system" else ""


def _review(request: ModelRequest) -> ScriptedResponse:
    results = [m.text for m in request.messages if m.role == "tool"]
    if not results:
        return ScriptedResponse(
            "Checking the change and running the tests myself.",
            [
                ScriptedToolCall("read_file", {"path": "calc.py"}),
                ScriptedToolCall(
                    "execute", {"command": f"{sys.executable} test_calc.py", "timeout": 60}
                ),
            ],
        )
    code, run = [*results, "", ""][:2]
    fixed = "/ len(values)" in code and "len(values) - 1" not in code
    passed = "exit code 0" in run and "Traceback" not in run
    if fixed and passed:
        return ScriptedResponse(
            "APPROVED: `mean` divides by len(values) and the test script passes."
        )
    return ScriptedResponse(
        f"REJECTED: the mean is {'fixed' if fixed else 'still wrong'} and the tests "
        f"{'pass' if passed else 'fail'}."
    )


def _respond(request: ModelRequest) -> ScriptedResponse:
    if _ROLE in _system(request):
        return _review(request)
    steps = sum(1 for m in request.messages if m.role == "assistant")
    if steps < 5:
        return respond_fixer(request)
    if steps == 5:
        return ScriptedResponse(
            "The tests pass. Before I hand this over, a reviewer checks the fix.",
            [
                ScriptedToolCall(
                    "agent_spawn",
                    {
                        "agent_id": "reviewer",
                        "task": "calc.py had a wrong denominator in mean(); it now divides by "
                        "len(values). Check the change and run test_calc.py.",
                        "timeout_seconds": 120,
                    },
                )
            ],
        )
    results = [m.text for m in request.messages if m.role == "tool"]
    verdict = results[-1].split("\n\n[sub-agent")[0] if results else "(no review)"
    return ScriptedResponse(
        f"Done. The bug was an off-by-one denominator in `mean`; the tests pass, and the "
        f"reviewer says: {verdict}"
    )


def review_demo_model() -> ScriptedModel:
    base = demo_model()
    return ScriptedModel(
        name=base.name, context_window=base.context_window, responder=_respond, delay=base.delay
    )
