"""Real MCP servers for the tests: the PyPI reference servers over stdio, our own over HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harnessed import HarnessAgent
from harnessed.mcp import MCP, MCPServer

NOTES_SERVER = Path(__file__).with_name("notes_server.py")


def mcp_of(agent: HarnessAgent) -> MCP:
    """The agent's MCP capability (built by ``mcp_servers=``)."""
    capability = agent.capability(MCP)
    assert capability is not None
    return capability


def time_server(**options: object) -> MCPServer:
    """The reference ``mcp-server-time`` from PyPI (installed by the ``dev`` extra)."""
    return MCPServer.stdio(sys.executable, "-m", "mcp_server_time", name="time", **options)  # type: ignore[arg-type]


def git_server(repo: Path, **options: object) -> MCPServer:
    """The reference ``mcp-server-git`` from PyPI, limited to ``repo``."""
    return MCPServer.stdio(
        sys.executable,
        "-m",
        "mcp_server_git",
        "--repository",
        str(repo),
        name="git",
        **options,  # type: ignore[arg-type]
    )


def notes_stdio_server(**options: object) -> MCPServer:
    """Our server over stdio (for killing it in the middle of a call)."""
    return MCPServer.stdio(sys.executable, str(NOTES_SERVER), "--stdio", name="notes", **options)  # type: ignore[arg-type]


def start_notes_server(port: int = 0) -> tuple[subprocess.Popen[bytes], str]:
    """Our SDK-built server in its own process, on a socket bound here (to a free port, or to
    ``port`` again after a server on it was stopped)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(NOTES_SERVER), "--fd", str(sock.fileno())],
        pass_fds=[sock.fileno()],
    )
    sock.close()
    return process, f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def notes_url() -> Iterator[str]:
    process, url = start_notes_server()
    try:
        yield url
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "test@example.com")
    git("config", "user.name", "Test")
    (repo / "README.md").write_text("hello\n")
    git("add", "README.md")
    git("commit", "-q", "-m", "first commit")
    return repo


def children_running(marker: str) -> list[int]:
    """Pids of this process's children whose command line contains ``marker``."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == me and marker in cmdline:
            found.append(int(entry))
    return found


@pytest.fixture
def kill_server() -> Callable[[str], int]:
    def kill(marker: str) -> int:
        pids = children_running(marker)
        assert len(pids) == 1, f"expected one running {marker} server, found {pids}"
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    return kill
