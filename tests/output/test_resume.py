"""A typed call survives its process being killed: a new process resumes the session and gets
the typed answer; the logged answer reads back as the type."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from harnessed.models import ScriptedModel, ScriptedResponse, ScriptedToolCall
from harnessed.output import FINAL_TOOL
from tests.output.typed_worker import CTX, Report, typed_agent

ROOT = Path(__file__).resolve().parents[2]


async def test_a_typed_call_killed_in_a_tool_is_resumed_by_another_process(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.output.typed_worker", str(tmp_path)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()

    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[ScriptedToolCall(FINAL_TOOL, {"files": 3, "summary": "small"})]
            )
        ]
    )
    agent = typed_agent(str(tmp_path), model)
    result = await agent.call(None, CTX)  # no input: continue the session where it stopped
    assert result.status == "completed"
    assert result.output == Report(files=3, summary="small")
    (request,) = model.requests
    scan_result = next(r for m in request.messages for r in m.tool_results)
    assert scan_result.is_error and "interrupted" in scan_result.content.lower()
    assert FINAL_TOOL in {t.name for t in request.tools}
    # the answer is logged as the reply's structured payload
    messages = await agent.session_messages(CTX)
    assert Report.model_validate(messages[-1].metadata["output"]) == result.output
    await agent.close()
