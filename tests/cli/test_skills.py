"""`harnessed skills list` and `harnessed skills validate PATH`."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessed.cli import main
from tests.skills.samples import INVALID, VALID, write_skill


def test_list_shows_layers_and_skipped_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws, app = tmp_path / "ws", tmp_path / "app"
    write_skill(ws / "skills", "git-helper", VALID["git-helper"])
    write_skill(app, "minimal", VALID["minimal"])
    write_skill(ws / "skills", "other", INVALID["folder mismatch"][1])
    code = main(["skills", "list", "--workspace", str(ws), "--skill-dir", str(app)])
    out = capsys.readouterr().out
    assert code == 0
    assert "git-helper" in out and "workspace" in out
    assert "minimal" in out and "skill_dirs[0]" in out
    assert "skipped" in out and "differs from its folder" in out


def test_validate_reports_each_rule_and_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_skill(tmp_path / "one", "pdf-processing", VALID["pdf-processing"])
    assert main(["skills", "validate", str(good)]) == 0
    assert "valid" in capsys.readouterr().out
    folder, text, words = INVALID["double hyphen"]
    write_skill(tmp_path / "many", folder, text)
    write_skill(tmp_path / "many", "minimal", VALID["minimal"])
    assert main(["skills", "validate", str(tmp_path / "many")]) == 1
    out = capsys.readouterr().out
    assert "invalid" in out and words in out and "valid   " in out
    assert main(["skills", "validate", str(tmp_path / "missing")]) == 1
    assert "does not exist" in capsys.readouterr().out


def test_list_names_each_skipped_folder_once(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    ws = tmp_path / "ws"
    write_skill(ws / "skills", "other", INVALID["folder mismatch"][1])
    src = str(Path(__file__).resolve().parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-m", "harnessed.cli", "skills", "list", "--workspace", str(ws)],
        env={**os.environ, "PYTHONPATH": src, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    output = done.stdout + done.stderr
    assert output.count("differs from its folder") == 1, output
