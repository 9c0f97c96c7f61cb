"""The documented checks pass: ``ruff check .`` and ``ruff format --check .`` (README's code
blocks included), with the ruff version the dev extra pins."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    if shutil.which("ruff") is None:
        if os.environ.get("CI"):
            pytest.fail("ruff is not installed (pip install -e '.[dev]')")
        pytest.skip("ruff is not installed")
    return ["ruff"]


@pytest.mark.parametrize("check", [["check", "."], ["format", "--check", "."]], ids=str)
def test_ruff_is_clean(check: list[str]) -> None:
    done = subprocess.run(
        [*_ruff(), *check], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_pinned_ruff_is_the_one_installed() -> None:
    import re

    pinned = re.search(r'"ruff==([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned is not None, "pyproject.toml must pin ruff in the dev extra"
    done = subprocess.run(
        [*_ruff(), "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split()[-1] == pinned.group(1), (sys.executable, done.stdout)
