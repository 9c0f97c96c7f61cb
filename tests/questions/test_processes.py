"""A question asked in one process is answered from another; the first goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.questions import ASK_USER
from tests.questions.answer_worker import CTX, asking_agent

ROOT = Path(__file__).resolve().parents[2]


def answer_from_another_process(workspace: Path, request_id: str, answer: object) -> str:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.questions.answer_worker",
            str(workspace),
            request_id,
            json.dumps(answer),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_a_question_is_answered_from_a_second_process(tmp_path: Path) -> None:
    schema = {"type": "integer", "minimum": 1, "maximum": 10}
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall(ASK_USER, {"question": "How many workers?", "schema": schema})
                ]
            ),
            "Starting the workers.",
        ]
    )
    agent = asking_agent(str(tmp_path), model)
    first = await agent.call("start the workers", CTX)
    assert first.status == "pending"
    (request_id,) = first.pending

    refused = answer_from_another_process(tmp_path, request_id, 99)
    assert "QuestionAnswerError" in refused and "maximum" in refused
    said = answer_from_another_process(tmp_path, request_id, 4)
    assert said.splitlines() == ["question: How many workers?", "answered"]

    done = await agent.call(None, CTX)
    assert done.status == "completed" and done.text == "Starting the workers."
    seen = [r.content for m in model.requests[1].messages for r in m.tool_results]
    assert seen == ["The user answered (JSON): 4"]
    await agent.close()
