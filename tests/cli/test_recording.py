"""The session's last request, kept for `harnessed inspect --show`, is the run's own: a
sub-agent sharing the model object does not overwrite it."""

from __future__ import annotations

import json
from pathlib import Path

from harnessed.cli.recording import RecordingModel
from harnessed.messages import Msg
from harnessed.models import ModelRequest, ScriptedModel
from harnessed.workspace import Workspace


async def _send(model: RecordingModel, call_id: str, text: str) -> None:
    request = ModelRequest(messages=(Msg.user(text),), call_id=call_id)
    async for _ in model.stream(request):
        pass


async def test_only_announced_requests_are_kept(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    model = RecordingModel(ScriptedModel(["a", "b", "c"]), workspace, "last.json")
    model.expect("mc_run_1")
    await _send(model, "mc_run_1", "the run's request")
    await _send(model, "mc_child_1", "a sub-agent's request through the same model")
    kept = json.loads((tmp_path / "last.json").read_text())
    assert kept["call_id"] == "mc_run_1"
    assert kept["messages"][0]["content"][0]["text"] == "the run's request"
    await _send(model, "mc_run_1", "the same id again is not announced twice")
    assert json.loads((tmp_path / "last.json").read_text())["messages"] == kept["messages"]
