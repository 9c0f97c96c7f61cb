"""What `harnessed run`, `sessions` and `inspect` show and return, against a local server."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from harnessed import ContextManifest, HarnessAgent, RuntimeContext
from harnessed.cli import main
from harnessed.cli.inspect import budget_bar
from harnessed.cli.render import EventPrinter
from harnessed.events import ToolResultEvent
from harnessed.messages import ToolResultBlock
from harnessed.models import ScriptedModel
from tests.cli.test_run import chunk, tool_call_reply
from tests.support.http_server import LocalServer, Reply


def text_reply(text: str) -> Reply:
    return Reply(sse=[chunk({"role": "assistant", "content": text}, "stop"), "data: [DONE]\n\n"])


def call_reply(name: str, arguments: dict[str, object]) -> Reply:
    call = {
        "index": 0,
        "id": f"call_{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return Reply(
        sse=[chunk({"role": "assistant", "tool_calls": [call]}, "tool_calls"), "data: [DONE]\n\n"]
    )


@pytest.fixture
def run(http_server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("COLUMNS", "100")

    def go(*args: str) -> int:
        base = ["--model", "openai:gpt-test", "--base-url", http_server.url + "/v1"]
        return main(["run", *args, *base, "--workspace", str(tmp_path)])

    return go


def test_exit_codes_say_how_the_call_ended(run, http_server, capsys):
    http_server.queue(text_reply("done"))
    assert run("a task") == 0
    http_server.queue(call_reply("list_files", {"path": "."}))
    assert run("loop", "--max-iters", "1") == 3
    assert "max_iters" in capsys.readouterr().out
    http_server.queue(Reply(400, {"error": {"message": "bad request", "type": "x"}}))
    assert run("fail") == 1
    assert run("usage", "--max-iters", "0") == 2
    with pytest.raises(SystemExit) as caught:
        run("both", "--yes", "--permission-mode", "explore")
    assert caught.value.code == 2


def test_each_run_is_a_new_session_unless_continued(run, http_server, tmp_path, capsys):
    http_server.queue(text_reply("A done"), text_reply("B done"), text_reply("B again"))
    assert run("task A") == 0
    assert run("task B") == 0
    second = http_server.requests[1].json()["messages"]
    assert "task A" not in json.dumps(second)  # task B starts clean
    assert run("more on B", "--continue") == 0
    third = json.dumps(http_server.requests[2].json()["messages"])
    assert "task B" in third and "task A" not in third
    capsys.readouterr()
    assert main(["sessions", "--workspace", str(tmp_path)]) == 0
    listed = capsys.readouterr().out
    assert len(re.findall(r"\d{8}-\d{6}-[0-9a-f]{4}", listed)) >= 2
    assert "continue one with: harnessed run --session" in listed


def test_retries_failed_commands_todos_and_markdown_are_shown(run, http_server, capsys):
    busy = Reply(503, {"error": {"message": "server busy"}})
    http_server.queue(
        busy,
        call_reply(
            "todo_write",
            {
                "todos": [
                    {"id": "1", "content": "read the code", "status": "completed"},
                    {"id": "2", "content": "fix the bug", "status": "in_progress"},
                ]
            },
        ),
        tool_call_reply("echo broken; exit 3"),
        text_reply("# Result\n\nThe build is **broken**."),
    )
    assert run("check the build", "--yes", "--tasks") == 0
    out = capsys.readouterr().out
    assert "HTTP 503" in out and "attempt 1 of 3 failed, retrying in" in out
    assert "☑ read the code" in out and "◐ fix the bug" in out
    assert '"status"' not in out  # not raw JSON
    assert "✗ execute" in out and "exit code 3" in out
    assert "The build is broken." in out and "**" not in out


def test_tool_output_is_not_highlighted():
    console = Console(record=True, force_terminal=True, color_system="truecolor", width=100)
    printer = EventPrinter(console)
    result = ToolResultBlock("c1", "x = 42 at 0x1F in /etc/passwd 'quoted'", name="read_file")
    printer.handle(ToolResultEvent(result=result, duration_ms=3.0, run_id="r", session_id="s"))
    ansi = console.export_text(styles=True)
    line = next(part for part in ansi.splitlines() if "x = 42" in part)
    assert "x = 42 at 0x1F in /etc/passwd 'quoted'" in line  # one run of one style


def test_version_and_base_url(run, http_server, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert re.search(r"harnessed \d+\.\d+", capsys.readouterr().out)
    http_server.queue(text_reply("hi"))
    assert run("hello") == 0
    assert http_server.requests[-1].path == "/v1/chat/completions"


def test_search_and_sessions_leave_no_files_where_there_are_no_logs(tmp_path, capsys):
    assert main(["search", "invoice", "--workspace", str(tmp_path)]) == 1
    assert main(["sessions", "--workspace", str(tmp_path)]) == 1
    assert list(tmp_path.iterdir()) == []


def _manifest(breakdown: dict[str, int], limit: int) -> ContextManifest:
    return ContextManifest(
        call_id="c",
        purpose="reasoning",
        model="m",
        policy_version="v",
        estimated_input_tokens=sum(breakdown.values()),
        input_limit=limit,
        counting_method="heuristic",
        exact=False,
        task_revision=0,
        breakdown=breakdown,
    )


def test_bars_draw_each_part_at_its_share():
    tiny = budget_bar(_manifest({"system": 2, "history": 500}, 1_000), width=20)
    drawn = {span.style: tiny.plain[span.start : span.end] for span in tiny.spans}
    assert "magenta" not in drawn  # 0.2 % is less than an eighth of a cell: not inflated
    assert drawn["green"] == "█" * 10  # history: exactly half of 20 cells
    quarter = budget_bar(_manifest({"system": 125, "history": 0}, 1_000), width=20)
    assert quarter.plain.startswith("██▌")  # 12.5 % of 20 cells = 2.5 cells


async def _session(workspace: Path) -> None:
    agent = HarnessAgent(
        "harnessed",
        ScriptedModel(["first", "second"], context_window=200_000),
        sys_prompt="You answer briefly.",
        workspace=workspace,
    )
    try:
        ctx = RuntimeContext("default", "s1")
        await agent.call("hello " * 3000, ctx)
        await agent.call("again", ctx)
    finally:
        await agent.close()


def test_inspect_fits_80_columns_without_cutting_numbers(tmp_path, capsys, monkeypatch):
    asyncio.run(_session(tmp_path))
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["inspect", "--workspace", str(tmp_path), "--session", "s1"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "…" not in out
    assert re.search(r"\d[\d,]*/\d[\d,]*", out)  # used/limit shown whole
    assert "history" in out and "window 200,000 (given)" in out


def test_inspect_show_prints_the_request_the_model_received(run, http_server, tmp_path, capsys):
    http_server.queue(text_reply("ok"))
    assert run("what is in README.md?", "--session", "s9", "--system", "Be brief.") == 0
    capsys.readouterr()
    assert main(["inspect", "--workspace", str(tmp_path), "--session", "s9", "--show"]) == 0
    shown = capsys.readouterr().out
    sent = http_server.requests[-1].json()
    assert "Be brief." in shown and "what is in README.md?" in shown
    for message in sent["messages"]:
        for line in str(message["content"]).splitlines():
            assert line.strip() in shown  # every line the model received
    assert "read_file" in shown  # the tool schemas too
