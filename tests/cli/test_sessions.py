"""`harnessed reindex` and `harnessed search` on a recorded workspace."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harnessed import HarnessAgent, RuntimeContext
from harnessed.cli import main
from harnessed.models import ScriptedModel


async def record(workspace: Path) -> None:
    agent = HarnessAgent("bot", ScriptedModel(["The invoice was paid.", "ok"]), workspace=workspace)
    await agent.call("Was the invoice for ACME paid?", RuntimeContext("alice", "s1"))
    await agent.call("Remind me about the dentist", RuntimeContext("bob", "s1"))
    await agent.close()


def test_reindex_rebuilds_a_deleted_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(record(tmp_path))
    for index in tmp_path.glob("agents/bot/sessions/*/index.sqlite3*"):
        index.unlink()
    assert main(["reindex", "--workspace", str(tmp_path), "--agent", "bot"]) == 0
    out = capsys.readouterr().out
    assert "user alice: 2 message(s) indexed" in out and "user bob: 2 message(s)" in out
    assert (tmp_path / "agents/bot/sessions/alice/index.sqlite3").is_file()
    args = ["search", "invoice acme", "--workspace", str(tmp_path), "--agent", "bot"]
    assert main([*args, "--user", "alice", "--match", "all"]) == 0
    out = capsys.readouterr().out
    assert "s1#2" in out and "Was the invoice for ACME paid?" in out
    assert main([*args, "--user", "bob"]) == 1  # bob's sessions have no invoice
    assert "no message of user 'bob'" in capsys.readouterr().out


def test_cli_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reindex", "--workspace", str(tmp_path / "missing")]) == 2
    assert main(["reindex", "--workspace", str(tmp_path), "--agent", "nobody"]) == 1
    assert "no session logs of agent 'nobody'" in capsys.readouterr().out
    assert main(["search", "?!", "--workspace", str(tmp_path)]) == 2
    assert "no words" in capsys.readouterr().out
    assert main(["search", "x", "--workspace", str(tmp_path), "--limit", "0"]) == 2


def test_reindex_with_tantivy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tantivy")
    asyncio.run(record(tmp_path))
    base = ["--workspace", str(tmp_path), "--agent", "bot", "--backend", "tantivy"]
    assert main(["reindex", *base]) == 0
    assert (tmp_path / "agents/bot/sessions/alice/index.tantivy").is_dir()
    assert main(["search", "dentist", *base, "--user", "bob"]) == 0
    assert "Remind me about the dentist" in capsys.readouterr().out


def test_reindex_can_switch_the_tokenizer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(record(tmp_path))  # indexed with the default word tokenizer
    base = ["--workspace", str(tmp_path), "--agent", "bot", "--tokenizer", "trigram"]
    assert main(["search", "voic", *base, "--user", "alice"]) == 2  # the index does not fit
    assert "trigram" in capsys.readouterr().out
    assert main(["reindex", *base]) == 0
    assert main(["search", "voic", *base, "--user", "alice"]) == 0  # part of "invoice"
    assert "Was the invoice for ACME paid?" in capsys.readouterr().out
