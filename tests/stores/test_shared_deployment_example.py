"""The docs' shared-deployment example runs as printed (on the test server)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

from tests.support.postgres import URL, require_postgres
from tests.support.readme import marked_example

ROOT = Path(__file__).resolve().parents[2]


def test_the_shared_deployment_example_runs() -> None:
    require_postgres()
    code = marked_example("<!-- example: tests/stores/test_shared_deployment_example.py -->")
    assert 'URL = "postgresql://postgres@127.0.0.1:5432/test"' in code
    code = code.replace("postgresql://postgres@127.0.0.1:5432/test", URL)
    code = code.replace('"coder"', repr("readme" + uuid.uuid4().hex[:8]))  # a fresh agent
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "blue"
    assert "text='the door is blue'" in lines[1]
