"""RemoteSandbox against a real ``harnessed sandbox-server`` process over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harnessed import RuntimeContext
from harnessed.sandbox import BubblewrapSandbox, RemoteSandbox
from tests.sandbox.conftest import require_bwrap
from tests.sandbox.helpers import execute, run
from tests.support.fixtures import tool_step

TOKEN = "test-token-0123456789abcdef"
BOB = RuntimeContext("bob", "s1")


def start_server(root: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """``harnessed sandbox-server --port 0`` in a child process; its announced URL."""
    env = {**os.environ, "HARNESSED_SANDBOX_TOKEN": TOKEN}
    process = subprocess.Popen(
        [sys.executable, "-c", "from harnessed.cli import main; raise SystemExit(main())",
         "sandbox-server", "--root", str(root), "--port", "0", *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()  # blocks until it listens (or dies: then it is empty)
    if "listening on " not in line:
        process.kill()
        raise RuntimeError(f"the sandbox server did not start: {line!r}")
    url = line.split("listening on ", 1)[1].strip()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/health", timeout=1)
            return process, url
        except httpx.HTTPError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the sandbox server did not answer")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    process, url = start_server(tmp_path / "server-root")
    yield url
    process.terminate()
    process.wait(10)


def test_every_request_needs_the_token(server: str) -> None:
    assert httpx.get(f"{server}/health").status_code == 401
    wrong = {"Authorization": "Bearer not-the-token-at-all"}
    assert httpx.post(f"{server}/sessions/a/execute", json={"command": "id"}, headers=wrong)\
        .status_code == 401  # fmt: skip
    good = {"Authorization": f"Bearer {TOKEN}"}
    answer = httpx.post(f"{server}/sessions/a/execute", json={"command": "echo hi"}, headers=good)
    assert answer.json() == {
        "stdout": "hi\n", "stderr": "", "exit_code": 0, "timed_out": False,
        "truncated": False, "total_bytes": 3, "notes": [],
    }  # fmt: skip
    escape = httpx.put(f"{server}/sessions/a/files/..%2F..%2Fevil", content=b"x", headers=good)
    assert escape.status_code == 400
    assert httpx.get(f"{server}/sessions/a/files/missing", headers=good).status_code == 404


async def test_a_wrong_token_is_a_clear_tool_error(server: str, tmp_path: Path) -> None:
    [text] = await run(tmp_path, RemoteSandbox(server, "wrong-token-0000000000"), BOB,
                       [execute("echo hi")])  # fmt: skip
    assert "refused the token" in text


async def test_remote_files_follow_the_workspace_and_survive_a_new_server(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    one, url_one = start_server(tmp_path / "server-one")
    try:
        first = await run(
            workspace,
            RemoteSandbox(url_one, TOKEN),
            BOB,
            [
                tool_step("write_file", path="in.txt", content="from the file tools\n"),
                execute("cat in.txt; mkdir -p out && echo made remotely > out/r.txt"),
                tool_step("read_file", path="out/r.txt"),
                execute("echo x > AGENTS.md"),
            ],
        )
    finally:
        one.terminate()
        one.wait(10)
    assert "from the file tools" in first[0 + 1]
    assert "made remotely" in first[2]
    assert "not saved to the workspace" in first[3] and "read-only" in first[3]
    assert not (workspace / "AGENTS.md").exists()
    assert (workspace / "agents/bot/sandboxes/bob/s1.tar.gz").exists()
    two, url_two = start_server(tmp_path / "server-two")  # a fresh container
    try:
        [text] = await run(workspace, RemoteSandbox(url_two, TOKEN), BOB,
                           [execute("cat out/r.txt; cat AGENTS.md")])  # fmt: skip
    finally:
        two.terminate()
        two.wait(10)
    assert "made remotely\nx\n" in text  # restored, with its own (never written back) AGENTS.md


async def test_what_a_bubblewrap_server_did_about_a_command_reaches_the_model(
    tmp_path: Path,
) -> None:
    require_bwrap(BubblewrapSandbox())
    process, url = start_server(tmp_path / "server-root", "--backend", "bubblewrap")
    try:
        [text] = await run(
            tmp_path / "ws",
            RemoteSandbox(url, token=TOKEN),
            BOB,
            [execute("cp /bin/sh x && chmod u+s x && echo made")],
        )
    finally:
        process.terminate()
        process.wait(10)
    assert "made" in text
    assert "file capabilities are not allowed in the workspace; removed from x]" in text
