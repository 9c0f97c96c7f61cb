"""`harnessed demo` runs end to end: a scripted model fixes a real bug with real tools."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harnessed.cli import main


def test_demo_fixes_the_bug_and_the_tests_really_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["demo", "--workspace", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "scripted" in out  # labelled as a scripted demonstration
    assert "AssertionError" in out  # the real failing run was shown
    assert "all 2 checks passed" in out
    assert "return sum(values) / len(values)" in (tmp_path / "calc.py").read_text()
    check = subprocess.run(
        [sys.executable, "test_calc.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert check.returncode == 0
    # the session (its log, the source of its history) was saved under the workspace
    assert list((tmp_path / "agents").rglob("*.log.jsonl"))


def test_demo_as_a_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harnessed.cli.main", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "completed" in proc.stdout


def test_run_without_credentials_fails_clearly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code = main(["run", "hello", "--model", "openai:gpt-4.1-mini", "--workspace", str(tmp_path)])
    assert code == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().out
