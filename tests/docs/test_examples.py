"""Every docs block marked ``<!-- example: tests/docs/test_examples.py -->`` runs as printed.

Each block is a script of its own, run in a fresh directory by a fresh interpreter with no API
key and no proxy settings (the models are ``ScriptedModel``; nothing reaches the internet).
When the page shows an ``Output`` block after it, the script prints exactly that.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.docs import ROOT, Block, examples_for, output_matches

MARKER = "<!-- example: tests/docs/test_examples.py -->"
EXAMPLES = examples_for("tests/docs/test_examples.py")


def _environment(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "CI", "HARNESSED_REQUIRE_SANDBOX")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update({"HOME": str(home), "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"})
    return env  # no OPENAI_API_KEY, no ANTHROPIC_API_KEY, no *_proxy, no HARNESSED_MODEL


def _needs_a_sandbox(block: Block) -> bool:
    """Examples that run commands: they need bubblewrap (``tests/sandbox/conftest.py``)."""
    return '"execute"' in block.code or "BubblewrapSandbox(" in block.code


def test_the_pages_have_examples_for_this_module() -> None:
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("block", EXAMPLES, ids=lambda block: block.where)
def test_the_example_runs_as_printed(block: Block, tmp_path: Path) -> None:
    if _needs_a_sandbox(block):
        from harnessed.sandbox import BubblewrapSandbox
        from tests.sandbox.conftest import require_bwrap

        require_bwrap(BubblewrapSandbox())
    script = tmp_path / "example.py"
    script.write_text(block.code + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"{block.where} failed:\n{done.stdout}\n{done.stderr}"
    if block.output is not None:
        assert output_matches(block.output, done.stdout), (
            f"{block.where} printed:\n{done.stdout}\nthe page says:\n{block.output}"
        )
