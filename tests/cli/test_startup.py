"""Start-up of the ``harnessed`` command: ``--help`` and ``--version`` import no command and
not the library; Ctrl-C while starting exits quietly; hints keep their brackets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harnessed.cli import main
from harnessed.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("rich", "harnessed.agent", "harnessed.models", "openai", "pydantic", "prompt_toolkit")


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_help_and_version_import_nothing_heavy(flag: str) -> None:
    code = (
        "import sys\n"
        "from harnessed.cli import main\n"
        f"try:\n    main([{flag!r}])\n"
        "except SystemExit:\n    pass\n"
        f"heavy = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or "
        f"any(m == h or m.startswith(h + '.') for h in {HEAVY!r})]\n"
        "commands = [m for m in sys.modules if m.startswith('harnessed.cli.') and "
        "m not in ('harnessed.cli.main',)]\n"
        "print('HEAVY', heavy, 'COMMANDS', commands)\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert "HEAVY [] COMMANDS []" in done.stdout, done.stdout
    if flag == "--help":  # every command is listed without being imported
        assert all(name in done.stdout for name in COMMANDS)


def test_a_command_parses_its_own_options() -> None:
    with pytest.raises(SystemExit) as ended:
        main(["chat", "--max-iters", "x"])
    assert ended.value.code == 2


def test_ctrl_c_while_starting_exits_quietly() -> None:
    code = (
        "import sys, types\n"
        "fake = types.ModuleType('harnessed.cli.demo')\n"
        "def register(sub):\n    raise KeyboardInterrupt\n"
        "fake.register = register\n"
        "sys.modules['harnessed.cli.demo'] = fake\n"
        "from harnessed.cli import main\n"
        "sys.exit(main(['demo']))\n"
    )
    done = _python(code)
    assert done.returncode == 130
    assert "Traceback" not in done.stderr
    assert "interrupted" in done.stderr


def test_install_hint_keeps_its_brackets(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # the serve extra is not installed
    code = main(["serve", "--agent", "tests.cli.chat_app:make_agent", "--token", "t=u"])
    assert code == 2
    assert "pip install 'harnessed[serve]'" in capsys.readouterr().out
