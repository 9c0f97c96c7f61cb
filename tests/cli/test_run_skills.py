"""`harnessed run` uses skills (the workspace's `skills/` and every `--skill-dir`), and says
how a call stopped by a capability ended."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from harnessed import CallContext, Capability, HarnessAgent
from harnessed.cli import main
from harnessed.cli import run as run_module
from tests.cli.test_cli_outcomes import call_reply, text_reply
from tests.skills.samples import write_skill
from tests.support.http_server import LocalServer


def skill_md(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\nInstructions of {name}.\n"


@pytest.fixture
def run_in(http_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> Callable[..., int]:
    """``harnessed run go`` against the local server in a workspace, with more options."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base = ["--model", "openai:gpt-test", "--base-url", http_server.url + "/v1"]
    return lambda ws, *more: main(["run", "go", *base, "--workspace", str(ws), *more])


def test_run_lists_and_loads_workspace_and_extra_skills(
    http_server: LocalServer, tmp_path: Path, run_in: Callable[..., int], capsys: Any
) -> None:
    ws, extra = tmp_path / "ws", tmp_path / "extra"
    write_skill(ws / "skills", "ws-skill", skill_md("ws-skill", "From the workspace."))
    write_skill(extra, "extra-skill", skill_md("extra-skill", "From a skill dir."))
    http_server.queue(call_reply("load_skill", {"name": "extra-skill"}), text_reply("done"))
    code = run_in(ws, "--skill-dir", str(extra))
    assert code == 0, capsys.readouterr().out
    first = http_server.requests[0].json()
    system = first["messages"][0]["content"]
    assert "- ws-skill: From the workspace." in system
    assert "- extra-skill: From a skill dir." in system
    assert "load_skill" in {t["function"]["name"] for t in first["tools"]}
    result = http_server.requests[1].json()["messages"][-1]["content"]
    assert "Instructions of extra-skill." in result


def test_run_refuses_a_skill_dir_that_is_not_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "go", "--model", "openai:gpt-test", "--base-url", "http://127.0.0.1:9/v1"]
    code = main([*args, "--workspace", str(tmp_path), "--skill-dir", str(tmp_path / "nope")])
    assert code == 2
    assert "is not a folder" in " ".join(capsys.readouterr().out.split())


class Stopper(Capability):
    name = "stopper"

    async def before_model_request(self, call: CallContext) -> None:
        call.request_stop("the spending limit is reached")


def test_a_call_stopped_by_a_capability_exits_5_with_its_reason(
    http_server: LocalServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_in: Callable[..., int],
    capsys: Any,
) -> None:
    def with_stopper(*args: Any, capabilities: Sequence[Capability] = (), **kw: Any) -> Any:
        return HarnessAgent(*args, capabilities=[*capabilities, Stopper()], **kw)

    monkeypatch.setattr(run_module, "HarnessAgent", with_stopper)
    assert run_in(tmp_path) == 5
    out = " ".join(capsys.readouterr().out.split())
    assert "stopped: the spending limit is reached" in out
    assert http_server.requests == []  # stopped before the first request
